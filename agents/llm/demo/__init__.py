"""The built-in demo LLM provider: a deterministic, rule-based investigator.

Used when no LLM API key is configured, so the embedded default shows a real
investigation against the demo cluster. It is stateless — every decision comes
from `request.messages` — and speaks both protocols: native tool calls when
`request.tools` is set, the ReAct text protocol when tools are only described
in the system prompt. Its answers say they come from the demo investigator.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

from agents.citations import CITATION
from agents.llm.types import (
    Chunk,
    LLMRequest,
    TextChunk,
    ThinkingChunk,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)
from agents.prompts.checks import HEALTHY, VERDICT_HEALTHY, VERDICT_PROBLEM, check_verdict
from agents.quotes import quote

from .chat import plan_chat
from .check import check_action, check_report, is_check
from .evidence import Conversation, log_highlights, read_conversation
from .findings import Findings
from .investigator import LABEL, Action, final_report, gather, next_action
from .judging import reflect, score
from .metrics import metrics_report, next_metrics_action, offers_metrics
from .orchestrator import is_orchestrator, orchestrate, orchestrator_report, sub_agent_results
from .remediation import is_remediation, next_remediation, remediation_report

CHARS_PER_TOKEN = 4  # rough token estimate, the same rule the summarization threshold uses
STREAM_PIECES = 4  # a few chunks, so the UI shows streaming without flooding the sockets
PACED_PIECES = 30  # with a pace, enough chunks that the text visibly streams in, as a real model's does
DEADLINE_MARGIN_S = 1.0  # the pace never eats the step's deadline: the reply is due before it
Reply = tuple[str, str, list[ToolCall]]  # text, thinking, tool calls


class DemoProvider:
    """Deterministic investigator for the embedded default; labelled "demo" in the UI."""

    name = "demo"

    def generate(self, request: LLMRequest) -> Iterator[Chunk]:
        kind = request.interaction_type
        calls: list[ToolCall] = []
        if kind == "executive_summary":
            text, thought = executive_summary(_last_user(request)), ""
        elif kind == "scoring":
            text, thought = score(_last_user(request)), ""
        elif kind == "memory_reflection":
            text, thought = reflect(_last_user(request)), ""
        elif kind == "summarization":
            text, thought = summarize(_last_user(request)), ""
        elif kind == "synthesis":
            text, thought = synthesize(_all_user(request)), ""
        else:
            text, thought, calls = self._investigate(request, chat=kind == "chat")
        yield from self._emit(request, text, thought, calls)

    def _investigate(self, request: LLMRequest, chat: bool) -> Reply:
        conv = read_conversation(request)
        if chat:
            return _chat(conv)
        found = gather(conv)
        forced = request.interaction_type == "forced_conclusion"
        if is_orchestrator(conv):
            return _orchestrate(request, conv, found, forced)
        if is_remediation(conv):
            fix = None if forced else next_remediation(conv)
            return _act(conv, [fix]) if fix else _conclude(conv, remediation_report(request, conv))
        checking = is_check(conv)
        if checking:
            step = None if forced else check_action(conv)
            action = Action(*step) if step else None
        elif offers_metrics(conv):
            action = None if forced else next_metrics_action(conv, found)
        else:
            action = None if forced else next_action(conv, found)
        if action is None:
            report = check_report(conv, found, LABEL) if checking else \
                metrics_report(conv, found) if offers_metrics(conv) else final_report(conv, found)
            return _conclude(conv, report)
        return _act(conv, [action])

    def _emit(self, request: LLMRequest, text: str, thought: str, calls: list[ToolCall]) -> Iterator[Chunk]:
        """The reply in pieces; with a pace (`latency_ms`, the time one step takes) spread over them, so the live
        timeline, the streaming text and the Running panel can be watched."""
        pace_s = request.provider.latency_ms / 1000
        pieces = _pieces(text, PACED_PIECES if pace_s else STREAM_PIECES)
        delay = pace_s / (len(pieces) + bool(thought) + 1)
        if thought:
            yield ThinkingChunk(text=thought)
            _pause(delay, request.deadline)
        _pause(delay, request.deadline)  # "thinking" before the first token, like a model's time to first token
        for piece in pieces:
            yield TextChunk(text=piece)
            _pause(delay, request.deadline)
        for call in calls:
            yield ToolCallChunk(call=call)
        prompt = sum(len(m.content) for m in request.messages) + sum(len(t.model_dump_json()) for t in request.tools)
        output = len(text) + len(thought) + sum(len(call.model_dump_json()) for call in calls)
        inp, out = prompt // CHARS_PER_TOKEN, max(1, output // CHARS_PER_TOKEN)
        yield UsageChunk(input_tokens=inp, output_tokens=out, total_tokens=inp + out)


def _act(conv: Conversation, actions: list[Action]) -> Reply:
    """Native: every action as a tool call of one reply. ReAct: the first (one call per reply)."""
    if conv.native:
        calls = [ToolCall(id=f"demo-{conv.call_count + n}", name=conv.tools[a.tool], arguments=a.arguments)
                 for n, a in enumerate(actions, 1)]
        return "", " ".join(dict.fromkeys(a.thought for a in actions)), calls
    action = actions[0]
    text = f"Thought: {action.thought}\nAction: {conv.tools[action.tool]}\nAction Input: {json.dumps(action.arguments)}"
    return text, "", []


def _conclude(conv: Conversation, report: str) -> Reply:
    thought = "I have enough evidence to conclude."
    if conv.native:
        return report, thought, []
    return f"Thought: {thought}\nFinal Answer: {report}", "", []


def _orchestrate(request: LLMRequest, conv: Conversation, found: Findings, forced: bool) -> Reply:
    results = sub_agent_results(request)
    actions = None if forced else orchestrate(conv, found, results)
    if actions is None:
        return _conclude(conv, orchestrator_report(conv, found, results))
    if actions:
        return _act(conv, actions)
    return "Thought: I wait for the results of the agents I dispatched.", "", []  # ReAct: a reply that calls nothing


def _pieces(text: str, count: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _pause(seconds: float, deadline: float | None) -> None:
    """Sleep for the pace, but never into the last second before the step's deadline."""
    if deadline is not None:
        seconds = min(seconds, deadline - time.time() - DEADLINE_MARGIN_S)
    if seconds > 0:
        time.sleep(seconds)


def _last_user(request: LLMRequest) -> str:
    users = [m.content for m in request.messages if m.role == "user"]
    return users[-1] if users else ""


def _all_user(request: LLMRequest) -> str:
    return "\n\n".join(m.content for m in request.messages if m.role == "user")


# ---- other interaction types ------------------------------------------------------------------

_ROOT_CAUSE = re.compile(r"\*\*Root cause:\*\*\s*(.+)")
_ACTION = re.compile(r"\*\*Action:\*\*\s*(.+)")  # a remediation's (remediation.py)
_CHECK_PROBLEM = re.compile(r"\*\*Problem:\*\*\s*(.+)")  # a check's report (check.py)


def _strip_markdown(text: str) -> str:
    return re.sub(r"[*_`#>]", "", text).strip()


def executive_summary(analysis: str) -> str:
    """One or two sentences: the root cause line if the analysis has one, else its opening sentences."""
    match = _ROOT_CAUSE.search(analysis)
    if match:
        cause = re.sub(r"[*`]", "", CITATION.sub("", match.group(1))).strip().rstrip(". ")  # names keep their _
        action = _ACTION.search(analysis)
        done = f" Action: {re.sub(r'[*`]', '', CITATION.sub('', action.group(1))).strip().rstrip('. ')}." \
            if action else ""
        return f"Root cause: {cause}.{done} (Summary by the demo investigator.)"
    match = _CHECK_PROBLEM.search(analysis)
    if match:
        problem = _strip_markdown(CITATION.sub("", match.group(1))).rstrip(". ")
        return f"Check failed: {problem}. (Summary by the demo investigator.)"
    body = " ".join(line for line in (_strip_markdown(x) for x in analysis.splitlines()) if line)
    sentences = re.split(r"(?<=[.!?])\s+", body)
    return quote(" ".join(sentences[:2]), 600) or "No analysis was available to summarise."


def summarize(result: str, keep: int = 12) -> str:
    """Shorten a tool result: its first lines plus every line that signals a problem."""
    lines = [line for line in result.splitlines() if line.strip()]
    head = lines[:3]
    signal = [line for line in log_highlights("\n".join(lines[3:]), limit=keep) if line not in head]
    shown = head + signal
    return (
        f"Summary of a {len(lines)}-line tool result (demo investigator; {len(lines) - len(shown)} lines "
        "omitted):\n" + "\n".join(shown)
    )


def synthesize(prompt: str) -> str:
    """Combine parallel investigations: list each one's root cause and keep the most supported one."""
    causes = [_strip_markdown(m.group(1)) for m in _ROOT_CAUSE.finditer(prompt)]
    lines = ["## Synthesis", "", LABEL, ""]
    if "VERDICT:" in prompt:  # a check's parallel runs: healthy only when every one of them is
        healthy = check_verdict(prompt) == HEALTHY
        lines += ["The check's investigations " + ("all found it healthy." if healthy else "found a problem."), "",
                  VERDICT_HEALTHY if healthy else VERDICT_PROBLEM]
        return "\n".join(lines)
    if not causes:
        lines.append("The investigations did not state a root cause; see their evidence above.")
        return "\n".join(lines)
    best = max(set(causes), key=causes.count)
    lines.append(f"**Root cause:** {best}")
    lines += ["", f"{causes.count(best)} of {len(causes)} investigations agree. Their conclusions:"]
    lines += [f"{i}. {cause}" for i, cause in enumerate(causes, 1)]
    return "\n".join(lines)


def _chat(conv: Conversation) -> Reply:
    """Answer the follow-up question (see chat.py); one tool call first when it asks for fresh data."""
    plan = plan_chat(conv, LABEL)
    if plan.tool:
        return _act(conv, [Action(plan.tool, plan.arguments or {}, plan.thought)])
    if conv.native:
        return plan.answer, "", []
    return f"Thought: I can answer from the context.\nFinal Answer: {plan.answer}", "", []
