"""The demo investigator as an orchestrator (offered `tarsy.dispatch_agent`): list the agents it may dispatch,
dispatch each with a task naming what the alert names, wait for their results, conclude citing their evidence.

Native tool calls dispatch them all in one reply, and a reply that only lists the agents waits; ReAct makes one
call per reply, so it dispatches one by one and waits with a reply that calls nothing. The results arrive as user
messages (tarsy.pipeline.sub_agents.results.result_message) carrying each sub-agent's analysis and evidence ids.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from agents.citations import CITATION, EVIDENCE_LABEL
from agents.llm.types import LLMRequest

from .evidence import Conversation
from .findings import Findings
from .investigator import LABEL, Action

_RESULT = re.compile(r"^Result of sub-agent (?P<agent>\S+) \(execution_id (?P<id>[^)]+)\): (?P<status>\w+)\.")
_ROOT_CAUSE = re.compile(r"\*\*Root cause:\*\*\s*(?P<cause>.+)")
_ACTIONS = re.compile(r"### Recommended actions\n(?P<body>(?:\d+\..*\n?)+)")
MAX_CITED = 4  # of a sub-agent's evidence ids cited beside its finding when its analysis cites none itself


@dataclass
class SubResult:
    agent: str
    execution_id: str
    status: str
    text: str
    evidence: list[str] = field(default_factory=list)


def is_orchestrator(conv: Conversation) -> bool:
    return "dispatch_agent" in conv.tools


def sub_agent_results(request: LLMRequest) -> dict[str, SubResult]:
    """The results pushed into the conversation, by execution id."""
    results = {}
    for message in request.messages:
        match = _RESULT.match(message.content) if message.role == "user" else None
        if match:
            results[match["id"]] = SubResult(match["agent"], match["id"], match["status"], message.content,
                                             EVIDENCE_LABEL.findall(message.content))
    return results


def _catalog(conv: Conversation) -> list[tuple[str, str]] | None:
    listed = [o for o in conv.attempted("list_agents") if not o.is_error]
    if not listed:
        return None
    try:
        agents = json.loads(listed[0].text).get("agents") or []
        return [(str(a["agent"]), str(a.get("description") or "")) for a in agents]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []


def _dispatched(conv: Conversation) -> dict[str, str]:
    """Execution id → agent of every accepted dispatch."""
    accepted = {}
    for obs in conv.attempted("dispatch_agent"):
        try:
            answer = json.loads(obs.text) if not obs.is_error else {}
        except ValueError:
            answer = {}
        if isinstance(answer, dict) and answer.get("execution_id"):
            accepted[str(answer["execution_id"])] = str(answer.get("agent") or obs.arguments.get("agent"))
    return accepted


def _subject(found: Findings) -> str:
    targets = found.targets
    named = [f"{kind} `{targets.first(kind)}`" for kind in ("pod", "workload", "namespace", "node")
             if targets.first(kind)]
    return ", ".join(named) or "the resources the alert names"


def orchestrate(conv: Conversation, found: Findings, results: dict[str, SubResult]) -> list[Action] | None:
    """The calls of this reply; [] to wait for results (ReAct); None to conclude."""
    catalog = _catalog(conv)
    if catalog is None:
        return [Action("list_agents", {}, "Which agents can I dispatch for this alert?")]
    tried = {str(o.arguments.get("agent")) for o in conv.attempted("dispatch_agent")}
    dispatch = [Action("dispatch_agent", {"agent": agent, "task": _task(found, description)},
                       f"Dispatch {agent} to examine {_subject(found)}.")
                for agent, description in catalog if agent not in tried]
    if dispatch:
        return dispatch if conv.native else dispatch[:1]
    pending = [agent for execution_id, agent in _dispatched(conv).items() if execution_id not in results]
    if not pending:
        return None
    thought = f"Waiting for the results of {', '.join(pending)}."
    return [Action("list_agents", {}, thought)] if conv.native else []


def _task(found: Findings, description: str) -> str:
    return (f"The alert concerns {_subject(found)}. As the agent that {description[:1].lower() + description[1:]}, "
            "find what your tools show about it and state the cause, citing the evidence ids of your results.")


def _finding(result: SubResult) -> tuple[str, str]:
    """(what the sub-agent concluded, its citations) for the report."""
    if result.status != "completed":
        return f"did not finish ({result.status})", ""
    match = _ROOT_CAUSE.search(result.text)
    cause = match["cause"].strip() if match else "gave no root cause"
    if CITATION.search(cause):
        return cause.rstrip("."), ""
    return cause.rstrip("."), "".join(f" [{e}]" for e in result.evidence[:MAX_CITED])


def orchestrator_report(conv: Conversation, found: Findings, results: dict[str, SubResult]) -> str:
    """The sub-agents' findings in the order they were dispatched; the first root cause found leads."""
    order = list(_dispatched(conv))
    ordered = sorted(results.values(), key=lambda r: order.index(r.execution_id) if r.execution_id in order
                     else len(order))
    findings = [(r, *_finding(r)) for r in ordered]
    main = next(((cause, cited) for r, cause, cited in findings if r.status == "completed" and
                 _ROOT_CAUSE.search(r.text)), None)
    lines = ["## Root cause analysis", "", LABEL, "", f"**Triaged:** {_subject(found)}, with "
             f"{', '.join(r.agent for r in ordered) or 'no sub-agent'}.", ""]
    if main:
        lines.append(f"**Root cause:** {main[0]}{main[1]}.")
    else:
        cited = "".join(f" [{e}]" for r in ordered for e in r.evidence[:MAX_CITED])
        lines.append(f"**Root cause:** undetermined: no sub-agent concluded{cited}.")
    lines += ["", "### What each agent found"]
    lines += [f"- **{r.agent}**: {cause}{cited}." for r, cause, cited in findings]
    actions = next((m["body"].strip() for r in ordered if (m := _ACTIONS.search(r.text))), "")
    if actions:
        lines += ["", "### Recommended actions", actions]
    return "\n".join(lines)
