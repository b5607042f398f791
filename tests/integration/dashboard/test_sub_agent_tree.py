"""An orchestrator's sub-agents on the session page (the test client; no browser): a tree under the
orchestrator, nested by depth, each node with its task, status and tokens and its own timeline container; in a
chat turn as in an investigation stage, and in the stage fragment the live page loads."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tarsy.models import AgentExecution, AlertSession, Stage, TimelineEvent

pytestmark = [pytest.mark.django_db(transaction=True)]

EVIL = '<img src=x onerror="window.__xss=1">'
LONG_TASK = ("Check whether api-1 restarts and why, with the events of the last hour. " * 3).strip()


def _execution(stage: Stage, name: str, parent: AgentExecution | None = None, **fields) -> AgentExecution:
    return AgentExecution.objects.create(
        stage=stage, session=stage.session, agent_name=name, agent_config_name=name,
        iteration_strategy="native-thinking", agent_index=AgentExecution.objects.filter(stage=stage).count(),
        parent_execution=parent, depth=parent.depth + 1 if parent else 0, **fields)


def _event(execution: AgentExecution, content: str) -> None:
    TimelineEvent.objects.create(session=execution.session, stage=execution.stage, execution=execution,
                                 sequence_number=1, event_type="llm_response", content=content)


def _tree_session() -> tuple[AlertSession, Stage, dict[str, AgentExecution]]:
    session = AlertSession.objects.create(alert_data="api-1 down", alert_type="triage", chain_id="triage",
                                          status="in_progress", author="alice")
    stage = Stage.objects.create(session=session, name="investigate", index=0, status="active")
    orchestrator = _execution(stage, "Orchestrator", status="waiting", total_tokens=100)
    pods = _execution(stage, "Pods", orchestrator, task=LONG_TASK, status="active", total_tokens=40)
    logs = _execution(stage, "Logs", pods, task=f"read the logs {EVIL}", status="queued")
    network = _execution(stage, "Network", orchestrator, task="db reachable?", status="completed", total_tokens=2)
    for execution in (orchestrator, pods, logs, network):
        _event(execution, f"{execution.agent_name} says hi")
    return session, stage, {e.agent_name: e for e in (orchestrator, pods, logs, network)}


def _node(html: str, execution: AgentExecution) -> str:
    """The node's summary line."""
    match = re.search(rf'data-sub-agent="{execution.id}"[^>]*>\s*<summary>(.*?)</summary>', html, re.S)
    assert match, f"no node for {execution.agent_name}"
    return match.group(1)


def test_sub_agents_render_as_a_tree_under_their_orchestrator():
    session, stage, executions = _tree_session()
    orchestrator, pods, logs, network = (executions[n] for n in ("Orchestrator", "Pods", "Logs", "Network"))
    for html in (Client().get(f"/sessions/{session.id}").content.decode(),
                 Client().get(f"/sessions/{session.id}/stages/{stage.id}").content.decode()):
        assert 'role="tab"' not in html  # one stage agent: no tabs, the sub-agents are in its tree
        assert html.count('class="agent-tree"') == 2  # the orchestrator's, and Pods' own
        # Nested by dispatch: Logs inside Pods' node, Pods and Network under the orchestrator, in that order.
        pods_at, logs_at, network_at = (html.index(f'data-sub-agent="{e.id}"') for e in (pods, logs, network))
        assert pods_at < logs_at < network_at
        assert html.index(f'data-container="exec-{orchestrator.id}"') > network_at  # tree above its timeline
        summary = _node(html, pods)
        assert "Pods" in summary and f'data-exec-status="{pods.id}">active<' in summary
        assert f'title="{LONG_TASK}"' in summary and "…" in summary  # truncated, in full on hover
        assert "40 tokens" in summary
        assert f'data-exec-status="{logs.id}">queued<' in _node(html, logs)
        assert f'data-exec-status="{orchestrator.id}">waiting<' in html
        assert "<img src=x" not in html and "&lt;img src=x" in html  # the task is text
        for execution in (pods, logs, network):  # each opens to its own timeline
            container = re.search(rf'data-container="exec-{execution.id}">(.*?)</ol>', html, re.S).group(1)
            assert f"{execution.agent_name} says hi" in container
        assert "142 tokens" in html  # the stage's total counts its sub-agents


def test_a_chat_reply_shows_its_sub_agents_as_a_tree():
    session = AlertSession.objects.create(alert_data="api-1 down", alert_type="triage", chain_id="triage",
                                          status="completed", author="alice")
    stage = Stage.objects.create(session=session, name="chat", index=1, kind="chat", status="active")
    reply = _execution(stage, "ChatAgent", status="waiting")
    pods = _execution(stage, "Pods", reply, task="Is api-1 running now?", status="active")
    html = Client().get(f"/sessions/{session.id}/stages/{stage.id}").content.decode()
    assert 'class="chat-turn' in html
    assert "Is api-1 running now?" in _node(html, pods)
    assert html.index(f'data-sub-agent="{pods.id}"') < html.index(f'data-container="exec-{reply.id}"')
