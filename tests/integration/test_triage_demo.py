"""The built-in `triage` chain with the demo investigator, on real workers, Redis and PostgreSQL: its orchestrator
dispatches the Kubernetes and metrics agents (over the demo cluster and the demo metrics server), both complete,
and the final analysis cites the evidence of both."""

from __future__ import annotations

import pytest

from tarsy.models import AgentExecution, TimelineEvent
from tarsy.services.intake.alerts import session_submit
from tests.support.configdir import write_config
from tests.support.sessions import assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ALERT = {"alertname": "KubePodCrashLooping", "namespace": "search", "pod": "search-api-6d8f9b7c5-h4n8q"}


@pytest.mark.timeout(240)
def test_the_triage_chain_dispatches_both_agents_and_cites_what_each_found(config_dir, worker):
    write_config(config_dir, tarsy={"defaults": {"llm_provider": "demo"}})
    proc = worker(concurrency=3)
    session = session_submit(alert_type="triage", data=ALERT)
    (done,) = wait_terminal([session.id], 180, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    parent = AgentExecution.objects.get(session=done, parent_execution__isnull=True)
    assert parent.agent_name == "TriageAgent"
    children = {c.agent_name: c for c in AgentExecution.objects.filter(parent_execution=parent)}
    assert set(children) == {"KubernetesAgent", "PrometheusAgent"}
    assert all(c.status == "completed" for c in children.values())
    dispatches = TimelineEvent.objects.filter(execution=parent, event_type="mcp_tool_call",
                                              metadata__tool_name="dispatch_agent")
    assert [e.iteration for e in dispatches] == [2, 2]  # both in one reply, after listing the agents
    queried = TimelineEvent.objects.filter(execution=children["PrometheusAgent"], event_type="mcp_tool_call",
                                           metadata__server_name="demo-metrics").count()
    assert queried >= 3
    assert "throttled in 92%" in children["PrometheusAgent"].final_analysis
    cited = {e["id"] for e in done.citations["valid"]}
    assert done.citations["invalid"] == []
    owners = {TimelineEvent.objects.get(session=done, event_type="tool_result", metadata__evidence_id=i).execution_id
              for i in cited}
    assert {children["KubernetesAgent"].id, children["PrometheusAgent"].id} <= owners
    assert "**KubernetesAgent**" in done.final_analysis and "**PrometheusAgent**" in done.final_analysis
    assert_no_duplicates(done.id)
