"""The demo investigator's follow-up chat: answer the question asked, from the investigation or one tool call.

The chat task (agents/prompts/templates/chat_task.md) ends with the question under `## Current question`;
everything above it (alert, investigation record, earlier answers) is context. The question decides the answer:
logs, events or details of a pod the context names are fetched with one tool call; "how do I fix it" quotes the
recommended actions; "why" the root cause and its evidence; anything else the context lines that share its words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .evidence import Conversation, log_highlights

_CURRENT_QUESTION = re.compile(r"^#+\s*Current question\s*$", re.M)
_LEGACY_QUESTION = re.compile(r"^Question:", re.M)
_NAME = re.compile(r"\b[a-z0-9]+(?:-[a-z0-9]+)+\b")
_ROOT_CAUSE = re.compile(r"\*\*Root cause:\*\*\s*(.+)")
_INVESTIGATED = re.compile(r"\*\*Investigated:\*\*\s*`([^`]+)` \(namespace `([^`]+)`\)")
_WORD = re.compile(r"[a-z0-9][a-z0-9\-]{3,}")
_STOP = {"what", "which", "when", "where", "does", "that", "this", "there", "with", "have", "from", "about", "they",
         "them", "their", "should", "could", "would", "tell", "show", "please", "investigation", "alert"}
_FIX = re.compile(r"\b(?:fix|resolve|remediat\w*|recommend\w*|mitigat\w*|next steps?|what should|how (?:do|can|to))\b",
                  re.I)
_WHY = re.compile(r"\b(?:why|cause|caused|root)\b", re.I)
_FETCH = (  # (question pattern, tool, whether it needs a pod)
    (re.compile(r"\blogs?\b", re.I), "pods_log", True),
    (re.compile(r"\bevents?\b", re.I), "events_list", False),
    (re.compile(r"\b(?:describe|details?|spec|limits?|image|requests?|probes?|env)\b", re.I), "pods_get", True),
)


@dataclass
class ChatPlan:
    """Either a tool call to make (`tool`, `arguments`, `thought`) or a finished answer (`answer`)."""

    answer: str = ""
    tool: str = ""
    arguments: dict[str, Any] | None = None
    thought: str = ""


def split_question(message: str) -> tuple[str, str]:
    """(question, context) of a chat task message; a message without a question heading is all question."""
    heads = list(_CURRENT_QUESTION.finditer(message)) or list(_LEGACY_QUESTION.finditer(message))
    if not heads:
        return message.strip(), ""
    return message[heads[-1].end():].strip(), message[: heads[-1].start()]


def _subject(question: str, context: str) -> tuple[str, str]:
    """(pod, namespace) the question is about: a name it shares with the context, else the investigated pod."""
    named = [n for n in _NAME.findall(question) if re.search(rf"(?<![\w\-]){re.escape(n)}(?![\w\-])", context)]
    investigated = _INVESTIGATED.search(context)
    pod = named[0] if named else (investigated.group(1) if investigated else "")
    if not pod:
        return "", ""
    for pattern in (rf"`{re.escape(pod)}` \(namespace `([^`]+)`\)", rf"^\s*(\S+)\s+v1\s+Pod\s+{re.escape(pod)}\b",
                    r"\bnamespace[\"']?\s*[:=]\s*[\"']?([a-z0-9\-]+)"):
        match = re.search(pattern, context, re.M)
        if match:
            return pod, match.group(1)
    return pod, "default"


def plan_chat(conv: Conversation, label: str) -> ChatPlan:
    question, context = split_question(conv.alert)
    pod, namespace = _subject(question, context)
    fetched = conv.observations
    if not fetched:
        for pattern, tool, needs_pod in _FETCH:
            if pattern.search(question) and tool in conv.tools and (pod or not needs_pod):
                arguments = {"namespace": namespace or "default", **({"name": pod} if needs_pod else {})}
                what = f"{tool.split('_')[1]} of {pod or namespace}"
                return ChatPlan(tool=tool, arguments=arguments, thought=f"The question asks for the {what}; fetch it.")
    lines = [label, "", f"**Question:** {question}", ""]
    if fetched:
        cause = _ROOT_CAUSE.search(context)
        lines += _from_tools(fetched) + (["", f"For context, the investigation's root cause: {cause.group(1)}"]
                                         if cause else [])
    elif _FIX.search(question):
        lines += _section(context, "Recommended actions") or ["The investigation recommended no actions."]
    elif _WHY.search(question):
        cause = _ROOT_CAUSE.search(context)
        lines += [f"**Root cause found by the investigation:** {cause.group(1)}" if cause else
                  "The investigation did not state a root cause.", "", *(_section(context, "Evidence")[:8])]
    else:
        lines += _matching_lines(question, context)
    return ChatPlan(answer="\n".join(lines).rstrip())


def _from_tools(observations: list) -> list[str]:
    lines = []
    for obs in observations:
        target = obs.arguments.get("name") or obs.arguments.get("namespace") or ""
        lines.append(f"`{obs.short}` of `{target}` just now{' (failed)' if obs.is_error else ''}:")
        shown = obs.text.strip().splitlines()[:1] if obs.is_error else log_highlights(obs.text, limit=8)
        lines += [f"> {line}" for line in shown]
    return lines


def _section(context: str, title: str) -> list[str]:
    """The lines of the last `### title` section of the context (the report's own sections)."""
    starts = list(re.finditer(rf"^#+\s*{re.escape(title)}\s*$", context, re.M))
    if not starts:
        return []
    body = context[starts[-1].end():]
    end = re.search(r"^(?:#+\s|`{3,})", body, re.M)
    return [line for line in (body[: end.start()] if end else body).strip().splitlines() if line.strip()]


def _matching_lines(question: str, context: str) -> list[str]:
    words = {w for w in _WORD.findall(question.lower()) if w not in _STOP}
    relevant = [line.strip() for line in context.splitlines()
                if line.strip() and words & set(_WORD.findall(line.lower()))]
    if not relevant:
        return [f"The investigation says nothing about {', '.join(sorted(words)) or 'this'}; ask about a pod's "
                "logs, events or details to fetch them."]
    return ["From the investigation:", *[f"- {line}" for line in dict.fromkeys(relevant)][:8]]
