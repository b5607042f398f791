"""ReAct reply parser: turns a model's free text into a final answer, a tool action, or precise format feedback.

Real models deviate from the ReAct format in many small ways (markdown decoration, fenced inputs, a thought and
an action on one line, invented observations). The parser is forgiving in tiers, most specific first:

1. section detection — `Thought` / `Action` / `Action Input` / `Final Answer` markers at line start (any case,
   `**bold**`, `### headers`, list bullets) or mid-line after a sentence ends; markers inside code fences ignored;
2. hallucination cut — an `Observation:` or a `[Based on …]` line after an action is the model inventing the tool
   result: everything from there on is dropped, as is a second Thought/Action (one action per reply);
3. missing-action recovery — `Action Input` without `Action`: the tool name is recovered from an inline
   `action: server.tool`, a line holding only a tool name, or a single known tool mentioned in the thought;
   an `Action` line carrying its own JSON supplies the missing `Action Input`;
4. malformed fallback — specific feedback for the exact shape that went wrong, plus the format reminder.

The `Action Input` text becomes tool arguments in `react_input`. Every pattern here is linear in the reply's length
(possessive whitespace runs, one merge pass over markers): a reply is untrusted text.

Final Answer takes precedence over an Action in the same reply (reference rule: "check for final answer first");
an answer written after an invented observation is cut with it, so there the action wins.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from agents.llm.types import ToolDefinition

from .react_input import parse_action_input

ReplyKind = Literal["final_answer", "action", "malformed", "unknown_tool"]

FORMAT_REMINDER = """Use exactly one of these two forms, then stop writing:

Thought: <your reasoning>
Action: <server.tool>
Action Input: <JSON object with the tool's arguments>

or

Thought: <your reasoning>
Final Answer: <your complete analysis>

Never write "Observation:" yourself: the system runs the tool and sends you its result."""

_NAMES = r"thoughts?|action[ \t_-]*+input|action|final[ \t_-]*+answer|observation"
# Every whitespace run below is possessive (`*+`): a reply is untrusted text, and a run that can be split between two
# adjacent quantifiers makes matching quadratic in its length.
# A marker at line start: optional heading/bullet/bold decoration, then the name and a colon (the colon may be
# omitted when the marker is the whole line, e.g. "### Thought").
_LINE_MARKER = re.compile(
    # Bold after the colon is consumed only when the marker opened bold (`**Final Answer:** x`), so an answer that
    # starts in bold (`Final Answer: **Root cause**`) keeps it.
    rf"^[ \t]*+(?:#{{1,6}}[ \t]*+)?(?:[-*>][ \t]++)?(?P<bold>\*\*|__)?[ \t]*+(?P<name>{_NAMES})[ \t]*+(?:\*\*|__)?"
    rf"[ \t]*+(?::[ \t]*+(?(bold)(?:\*\*|__)?)|(?=[ \t]*+$))",
    re.IGNORECASE | re.MULTILINE,
)
# A marker mid-line. Capitalised only, to keep prose like "the action: restart" from splitting: any marker right
# after a finished sentence; "Action Input" (distinctive enough) also after any whitespace. Not "Final Answer",
# which also occurs in reasoning ("I cannot give a Final Answer: data is missing").
_INLINE_MARKER = re.compile(
    r"(?:(?<=[.!?)\]}])[ \t]*+(?P<bold_a>\*\*)?(?P<a>Thought|Action Input|Action|Final Answer|Observation)"
    r"|(?<=\S)[ \t]++(?P<bold_b>\*\*)?(?P<b>Action Input))(?:\*\*)?[ \t]*+:[ \t]*+"
    r"(?(bold_a)(?:\*\*)?|(?(bold_b)(?:\*\*)?))"
)
# A `[Based on …]` line is the model narrating a tool result it invented: an observation.
_BASED_ON = re.compile(r"^[ \t]*+\[[ \t]*+based[ \t]++on\b", re.IGNORECASE | re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*+(`{3,}+|~{3,}+)[^\n]*+$", re.MULTILINE)
# A match starts only where a name run starts, so a long run is not rescanned from each of its characters.
_TOOL_NAME = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]++\.[A-Za-z0-9_.-]*[A-Za-z0-9_-]")
_INLINE_ACTION = re.compile(r"\baction\s*+:\s*+[`*'\"]*+(" + _TOOL_NAME.pattern + ")", re.IGNORECASE)
_DECORATION = "`*'\" \t"


@dataclass
class ParsedReply:
    """One parsed model reply; `feedback` is the next user message for `malformed` and `unknown_tool`."""

    kind: ReplyKind
    thought: str = ""
    action: str = ""
    action_input: dict[str, Any] | str = ""  # dict when structured; raw text when no structure was found
    final_answer: str = ""
    feedback: str = ""

    @property
    def arguments(self) -> dict[str, Any]:
        """Tool-call arguments: a raw-text input is passed as {"input": text}, the shape single-argument tools take."""
        if isinstance(self.action_input, dict):
            return self.action_input
        return {"input": self.action_input} if self.action_input else {}


@dataclass
class _Sections:
    thought: str = ""
    action: str | None = None
    action_input: str | None = None
    final_answer: str | None = None


def parse_react(text: str, tools: list[ToolDefinition]) -> ParsedReply:
    """Parse one ReAct reply against the tools this agent may call."""
    if not text or not text.strip():
        return _malformed("", "Your previous response was empty.")
    sections = _extract_sections(_strip_outer_fence(text))
    thought = sections.thought
    if sections.final_answer is not None:
        if sections.final_answer:
            return ParsedReply(kind="final_answer", thought=thought, final_answer=sections.final_answer)
        if sections.action is None:
            return _malformed(thought, "Your response has 'Final Answer:' but nothing after it.")
    return _resolve_action(sections, thought, tools)


def _resolve_action(sections: _Sections, thought: str, tools: list[ToolDefinition]) -> ParsedReply:
    action_text, input_text = sections.action, sections.action_input
    if action_text is None and input_text is not None:
        action_text = _recover_action(thought, tools)
        if action_text is None:
            return _malformed(thought, "Your response has 'Action Input:' but is missing 'Action:' (the tool name).")
    if action_text is None:
        return _malformed(
            thought,
            "Your response has neither 'Action:' nor 'Final Answer:'. Either call one tool or give your final answer.",
        )
    action, inline_input = _split_action(action_text, tools)
    if not action:
        return _malformed(thought, "Your response has an empty 'Action:'. Write the tool name as server.tool.")
    if input_text is None:
        input_text = inline_input
    if input_text is None and not _takes_no_required_args(action, tools):
        return _malformed(
            thought,
            f"Your response has 'Action: {action}' but is missing 'Action Input:'. Provide the tool arguments "
            "as a JSON object on an 'Action Input:' line.",
        )
    parsed_input = parse_action_input(input_text or "")
    known = {tool.name.lower(): tool.name for tool in tools}
    action = known.get(action.lower(), action)  # "Kubernetes-Server.Pods_List" names the same tool
    if action not in known.values():
        return ParsedReply(kind="unknown_tool", thought=thought, action=action, action_input=parsed_input,
                           feedback=unknown_tool_observation(action, tools))
    return ParsedReply(kind="action", thought=thought, action=action, action_input=parsed_input)


def _malformed(thought: str, problem: str) -> ParsedReply:
    return ParsedReply(kind="malformed", thought=thought, feedback=format_error_feedback(problem))


def format_error_feedback(problem: str) -> str:
    """The user message sent after a malformed reply: what was wrong, then the exact format."""
    return f"FORMAT ERROR: {problem}\n\n{FORMAT_REMINDER}"


def unknown_tool_observation(action: str, tools: list[ToolDefinition]) -> str:
    """Observation for a tool the agent cannot call, listing what it can call so it can correct itself."""
    lines = [f"Observation: Error - Unknown tool '{action}'."]
    if not _TOOL_NAME.fullmatch(action):
        lines.append("Tool names must be written as server.tool (the MCP server name, a dot, the tool name).")
    bare = action.rsplit(".", 1)[-1]
    matches = [tool.name for tool in tools if tool.name.rsplit(".", 1)[-1] == bare]
    if len(matches) == 1:
        lines.append(f"Did you mean '{matches[0]}'?")
    if tools:
        lines.append("Available tools:")
        lines.extend(f"  - {tool.name}: {tool.description}".rstrip() if tool.description else f"  - {tool.name}"
                     for tool in tools)
    else:
        lines.append("No tools are available: give your Final Answer.")
    return "\n".join(lines)


# ---- section detection -----------------------------------------------------------------------------------------


def _strip_outer_fence(text: str) -> str:
    """A whole reply wrapped in one code fence is unwrapped, so its markers count."""
    lines = text.strip().split("\n")
    opening = _FENCE.match(lines[0])
    if len(lines) < 3 or not opening or lines[-1].strip() != opening.group(1):
        return text
    body = "\n".join(lines[1:-1])
    return body if opening.group(1) not in body else text


def _fenced_spans(text: str) -> list[tuple[int, int]]:
    spans, opening = [], None
    for match in _FENCE.finditer(text):
        if opening is None:
            opening = match
        elif match.group(1)[0] == opening.group(1)[0] and len(match.group(1)) >= len(opening.group(1)):
            spans.append((opening.start(), match.end()))
            opening = None
    if opening is not None:
        spans.append((opening.start(), len(text)))
    return spans


def _markers(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, content start, canonical name) for every marker outside code fences, in order. Lazy: the reader stops
    at the first cut, so a reply repeating a marker endlessly costs no more than its first few."""
    line = ((m.start(), False, m.end(), _canonical(m.group("name"))) for m in _LINE_MARKER.finditer(text))
    based_on = ((m.start(), False, m.start(), "observation") for m in _BASED_ON.finditer(text))
    inline = ((m.start(), True, m.end(), _canonical(m.group("a") or m.group("b")))
              for m in _INLINE_MARKER.finditer(text))
    fences, fence, line_end = _fenced_spans(text), 0, 0
    for start, is_inline, end, name in heapq.merge(line, based_on, inline):
        if is_inline and start < line_end:
            continue  # a line marker's own words are not another marker
        if not is_inline:
            line_end = end
        while fence < len(fences) and fences[fence][1] <= start:
            fence += 1
        if fence == len(fences) or start < fences[fence][0]:
            yield start, end, name


def _canonical(name: str) -> str:
    squashed = re.sub(r"[ \t_-]+", "", name.lower())
    return {"actioninput": "action_input", "finalanswer": "final_answer", "thoughts": "thought"}.get(squashed, squashed)


def _extract_sections(text: str) -> _Sections:
    accepted: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    cut = len(text)
    for start, content_start, name in _markers(text):
        acting = bool(seen & {"action", "action_input"})
        if name == "observation":
            if acting:  # the model invented the tool result
                cut = start
                break
            continue
        if name == "final_answer":
            accepted.append((start, content_start, name))
            break  # everything after a final answer belongs to it
        if (name == "thought" and acting) or (name != "thought" and name in seen):
            cut = start  # a second step in one reply: only the first action runs
            break
        accepted.append((start, content_start, name))
        seen.add(name)
    sections = _Sections()
    thought_parts = [text[: accepted[0][0]] if accepted else text[:cut]]
    for index, (_, content_start, name) in enumerate(accepted):
        end = len(text) if name == "final_answer" else (accepted[index + 1][0] if index + 1 < len(accepted) else cut)
        content = text[content_start:end].strip()
        if name == "thought":
            thought_parts.append(content)
        else:
            setattr(sections, name, content)
    sections.thought = "\n\n".join(part.strip() for part in thought_parts if part.strip())
    return sections


# ---- action recovery and validation ----------------------------------------------------------------------------


def _recover_action(thought: str, tools: list[ToolDefinition]) -> str | None:
    """Tier 3: find the tool name of an `Action Input` whose `Action:` line is missing."""
    inline = _INLINE_ACTION.findall(thought)
    if inline:
        return inline[-1]
    lines = [line.strip(_DECORATION) for line in thought.splitlines() if line.strip()]
    if lines and _TOOL_NAME.fullmatch(lines[-1]):
        return lines[-1]
    mentioned = {tool.name for tool in tools if re.search(rf"(?<![\w.-]){re.escape(tool.name)}(?![\w-])", thought)}
    return mentioned.pop() if len(mentioned) == 1 else None


def _split_action(action_text: str, tools: list[ToolDefinition]) -> tuple[str, str | None]:
    """Tool name from the Action section, plus any arguments written on the same line or lines below it."""
    first, _, rest = action_text.strip().partition("\n")
    brace = first.find("{")
    if brace > 0:
        first, rest = first[:brace], first[brace:] + ("\n" + rest if rest else "")
    name = first.strip(_DECORATION).rstrip(".:,;")
    call = re.fullmatch(r"([\w.-]+)\((.*)\)", name, re.DOTALL)  # call syntax: server.tool(key="value")
    if call:
        name, rest = call.group(1), (call.group(2) or rest)
    if " " in name:  # prose around the name: prefer a known tool, then any server.tool token
        known = [tool.name for tool in tools if re.search(rf"(?<![\w.-]){re.escape(tool.name)}(?![\w-])", name)]
        shaped = _TOOL_NAME.findall(name)
        name = known[0] if known else (shaped[0] if shaped else name)
    rest = rest.strip()
    return name, (rest or None)


def _takes_no_required_args(action: str, tools: list[ToolDefinition]) -> bool:
    for tool in tools:
        if tool.name == action:
            return not tool.parameters.get("required")
    return True  # unknown tools get the unknown-tool observation, not a format error
