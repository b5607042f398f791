"""Turn a finished session into a scenario folder: the suite grows from real incidents, and replay uses it.

- `alert.yaml`: the alert as stored (already masked at intake), its type and runbook;
- `tools.yaml`: every tool output the session saw, as exact-match fixtures (already masked);
- `reference.yaml`: the LLM's recorded answers as a scripted-provider script, keyed by agent and played by
  iteration, with the recorded token usage;
- `expect.yaml`: a draft built from the final analysis, its tool calls and its size, for a person to edit.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from agents.mcp.masking.boundary import mask_text
from tarsy.errors import Conflict, NotFound
from tarsy.models import (
    TERMINAL_SESSION_STATUSES,
    AlertSession,
    LLMInteraction,
    MCPInteraction,
    Rating,
    SessionReview,
)
from tarsy.selectors.conversations import llm_conversations
from tarsy.services.sessions import session_get

from .fixture_tools import TOOLS
from .runconfig import REFERENCE_PREFIX
from .runner import INVESTIGATION_CALLS
from .scenario import alerted

AUXILIARY = ("summarization", "executive_summary")


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as `|` blocks, so recorded output stays readable and diffable."""


_Dumper.add_representer(str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v,
                                                              style="|" if "\n" in v else None))


def dump(data: Any, header: str = "") -> str:
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1_000_000)
    return "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines()) + text


def _alert(session: AlertSession) -> dict[str, Any]:
    alert_type = session.alert_type
    if session.chain_id.startswith(REFERENCE_PREFIX):  # a reference run of the eval suite: its real alert type
        alert_type = alert_type.split("@", 1)[0]
    data: Any = session.alert_data
    try:
        parsed = json.loads(data)
        if isinstance(parsed, (dict, list)) and json.dumps(parsed, indent=2, ensure_ascii=False) == data:
            data = parsed  # submitted as JSON: keep its structure (resubmitting it stores the same text)
    except ValueError:
        pass
    alert: dict[str, Any] = {"alert_type": alert_type, "data": data}
    if session.runbook_url:
        alert["runbook"] = session.runbook_url
    return alert


def _tools(session: AlertSession, notes: list[str]) -> dict[str, list[dict[str, Any]]]:
    fixtures: dict[str, list[dict[str, Any]]] = defaultdict(list)
    seen: set[str] = set()
    for call in MCPInteraction.objects.filter(session=session).order_by("created_at", "id"):
        name = f"{call.server}.{call.tool}"
        if call.tool not in TOOLS:
            notes.append(f"{name}: not a tool the fixture server offers; its output was left out")
            continue
        signature = name + json.dumps(call.arguments or {}, sort_keys=True)
        if signature in seen:
            continue  # the same call again: the fixture answers the first recorded output every time
        seen.add(signature)
        entry: dict[str, Any] = {"args": call.arguments or {}, "match": "exact"}
        if call.success:
            entry["result"] = call.result
        else:
            entry["error"] = call.error_message or call.result or "error"
        if "truncated for storage" in call.result:
            notes.append(f"{name}: the stored output was truncated; the fixture holds what was kept")
        fixtures[name].append(entry)
    if not fixtures:  # no tool output to record, but the session's servers must exist for a replay to offer them
        fixtures.update({f"{server}.pods_list": [] for server in _servers(session)})
    return dict(fixtures)


def _servers(session: AlertSession) -> list[str]:
    from tarsy.pipeline.agent_setup import resolve_for_execution

    servers: dict[str, None] = {}
    for execution in session.executions.exclude(stage__kind="chat"):
        servers.update(dict.fromkeys(resolve_for_execution(execution).mcp_servers))
    return list(servers)


def _turn(call: LLMInteraction) -> dict[str, Any]:
    """The recorded answer as a script turn (an error turn for a failed call)."""
    if not call.success or not call.conversation or call.conversation[-1].get("role") != "assistant":
        return {"error": {"message": call.error_message or "the recorded call failed", "code": "recorded_error",
                          "retryable": False}}
    reply = call.conversation[-1]
    turn: dict[str, Any] = {}
    if call.thinking_content:
        turn["thinking"] = call.thinking_content
    turn["text"] = reply.get("content") or ""
    calls = [{"name": c["name"], "arguments": c.get("arguments") or {}, "id": c.get("id")}
             for c in reply.get("tool_calls") or []]
    if calls:
        turn["tool_calls"] = calls
    if reply.get("provider_state"):
        turn["provider_state"] = reply["provider_state"]
    turn["usage"] = {"input_tokens": call.input_tokens, "output_tokens": call.output_tokens,
                     "thinking_tokens": call.thinking_tokens}
    return turn


def _by_iteration(calls: list[LLMInteraction]) -> list[dict[str, Any]]:
    """Turn n answers iteration n. Iterations without a call (another kind answered them) get the next turn."""
    last = {c.iteration: c for c in calls}  # a re-run iteration: its last recorded call is the one that counted
    top = max(last)
    turns: list[dict[str, Any]] = []
    for iteration in range(1, top + 1):
        following = next((last[i] for i in range(iteration, top + 1) if i in last), last[top])
        turns.append(_turn(following))
    return turns


def _script(session: AlertSession, notes: list[str]) -> dict[str, list[dict[str, Any]]]:
    calls = llm_conversations(list(LLMInteraction.objects.filter(session=session)
                                   .exclude(execution__stage__kind="chat")
                                   .select_related("execution__stage").order_by("created_at", "id")))
    keyed: dict[str, list[LLMInteraction]] = defaultdict(list)
    stages: dict[str, set[int]] = defaultdict(set)
    for call in calls:
        if call.interaction_type in AUXILIARY:
            keyed[call.interaction_type].append(call)
        elif call.execution is not None:
            keyed[call.execution.agent_name].append(call)
            stages[call.execution.agent_name].add(call.execution.stage.index)
    for agent, indexes in stages.items():
        if len(indexes) > 1:
            notes.append(f"{agent} ran in {len(indexes)} stages: a script keys answers by agent and iteration, so "
                         "a replay plays the same answers in each")
    script = {key: _by_iteration(items) for key, items in keyed.items() if key not in AUXILIARY}
    if keyed["summarization"]:
        script["summarization"] = _by_iteration(keyed["summarization"])
    if keyed["executive_summary"]:
        script["executive_summary"] = [_turn(keyed["executive_summary"][-1])]
    return script


def _root_cause_phrase(analysis: str) -> str:
    """A verbatim phrase of the analysis to start the draft from: its `Root cause:` line, else its first line of
    prose (emphasis marks dropped, as the scorer drops them)."""
    lines = [re.sub(r"^[#>\-\s]+", "", re.sub(r"[*`]", "", line)).strip() for line in analysis.splitlines()]
    lines = [line for line in lines if line]
    causes = [m.group(1) for m in (re.match(r"root cause\s*:\s*(.+)", line, re.I) for line in lines) if m]
    text = causes[0] if causes else next((line for line in lines if len(line) > 40), lines[0] if lines else "")
    return re.split(r"(?<=[.!?])\s", text)[0][:200]


def _draft_expect(session: AlertSession, review: SessionReview | None = None) -> tuple[dict[str, Any], str]:
    calls = MCPInteraction.objects.filter(session=session)
    tools = list(dict.fromkeys(f"{c.server}.{c.tool}" for c in calls.order_by("created_at", "id") if c.success))
    iterations = LLMInteraction.objects.filter(session=session, interaction_type__in=INVESTIGATION_CALLS,
                                               superseded=False).exclude(execution__stage__kind="chat").count()
    phrase = _root_cause_phrase(session.final_analysis)
    subject = alerted(_alert(session)["data"])
    expect: dict[str, Any] = {
        "culprit": [{"name": subject or "DRAFT", "aliases": []}],
        "findings": [{"name": "root cause (DRAFT: replace with the phrasings a correct analysis must contain)",
                      "any": [phrase or "DRAFT"]}],
        "forbidden": [],
        "tools": tools,
        "budgets": {"max_iterations": max(iterations + 2, math.ceil(iterations * 1.5)),
                    "max_tool_calls": max(calls.count() + 2, math.ceil(calls.count() * 1.5)),
                    "max_tokens": max(1, session.counters.total_tokens * 2)},
    }
    header = (f"DRAFT expectations from session {session.id} ({session.status}). Edit before committing:\n"
              "culprit: the component(s) the root cause lies in, with their aliases (DRAFT: the alerted one) — add\n"
              "victim: the alerted one, when the cause lies elsewhere;\n"
              "findings: phrasings (plain text or {regex: ...}) a correct analysis must contain;\n"
              "forbidden: red herrings it must not blame; tools: calls it must make; budgets: limits.\n"
              + _review_note(review) + "The session's final analysis, for reference:\n\n" + session.final_analysis)
    if review is not None and review.rating == Rating.INACCURATE:
        # The recorded conclusion was wrong: it becomes what a correct run must not say, not what it must say.
        expect["findings"] = [{"name": "root cause (DRAFT: what a correct analysis must contain; see the review "
                                       "above)", "any": ["DRAFT"]}]
        expect["forbidden"] = [{"name": "the conclusion reviewed as inaccurate (DRAFT: keep only the wrong part)",
                                "any": [phrase or "DRAFT"]}]
    return expect, header


def _review_note(review: SessionReview | None) -> str:
    if review is None:
        return ""
    lines = [f"Reviewed {review.rating} by {review.author}."]
    # Masked again: a review stored before reviews were masked on their way in still holds what was typed.
    if review.feedback:
        lines.append(f"Feedback: {mask_text(review.feedback)}")
    if review.action_taken:
        lines.append(f"Action taken: {mask_text(review.action_taken)}")
    return "\n".join(lines) + "\n"


def finished_session(session_id: Any) -> AlertSession:
    """The session to capture or replay: it must exist and have finished."""
    try:
        session = session_get(session_id=uuid.UUID(str(session_id)))
    except ValueError:
        raise NotFound(f"session {session_id} not found: not a session id") from None
    if session.status not in TERMINAL_SESSION_STATUSES:
        raise Conflict(f"session {session.id} is {session.status}: only a finished session can be captured",
                       {"status": session.status})
    return session


def export_session(session_id: Any, directory: Path, review: SessionReview | None = None) -> list[str]:
    """Write the scenario folder; return notes about what could not be captured exactly. With the engineer's
    `review`, the draft expectations carry its feedback (and an inaccurate conclusion becomes a forbidden one)."""
    session = finished_session(session_id)
    notes: list[str] = []
    tools = _tools(session, notes)
    script = _script(session, notes)
    expect, expect_header = _draft_expect(session, review)
    directory.mkdir(parents=True, exist_ok=True)
    origin = f"Exported from session {session.id} ({session.alert_type}, {session.status})."
    (directory / "alert.yaml").write_text(dump(_alert(session), origin))
    (directory / "tools.yaml").write_text(dump(tools, f"{origin}\nEvery tool output the session saw, as masked when "
                                                      "recorded."))
    (directory / "reference.yaml").write_text(dump(script, f"{origin}\nThe recorded LLM answers, played back by the "
                                                           "scripted provider."))
    (directory / "expect.yaml").write_text(dump(expect, expect_header))
    return notes
