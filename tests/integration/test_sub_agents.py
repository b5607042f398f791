"""Orchestrators dispatching sub-agents, on real Celery workers, Redis and PostgreSQL, driven by the scripted
provider: results pushed into the orchestrator's conversation, no task of its own in flight while it waits,
citations of the sub-agents' evidence, guardrails, timeouts and cancel."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tarsy.celery import app
from tarsy.models import AgentExecution, Event, LLMInteraction, MCPInteraction, Stage, TimelineEvent
from tarsy.services.chats import chat_submit
from tarsy.services.intake.alerts import session_submit
from tarsy.services.sessions import session_cancel
from tests.support.processes import wait_for
from tests.support.sessions import assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOOLS_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "tools_server.py")
TOOLS = {"transport": {"type": "stdio", "command": sys.executable, "args": [TOOLS_SERVER, "stdio"]}}


def _dispatch(*pairs: tuple[str, str]) -> dict:
    return {"tool_calls": [{"name": "tarsy.dispatch_agent", "arguments": {"agent": agent, "task": task}}
                           for agent, task in pairs]}


def _echo(text: str, latency_ms: int = 0) -> dict:
    return {"tool_calls": [{"name": "tools.echo", "arguments": {"text": text}}], "latency_ms": latency_ms}


def _native(**extra) -> dict:
    return {"iteration_strategy": "native-thinking", **extra}


def _config(scripted_config, script: dict, *, orchestrator: dict | None = None, sub_agents=("Pods", "Network", "Logs"),
            agents: dict | None = None, chunk_size: int = 0, tarsy: dict | None = None) -> None:
    script.setdefault("executive_summary", ["summary"])
    scripted_config(script, chunk_size=chunk_size, tarsy={**(tarsy or {}),
        "mcp_servers": {"tools": TOOLS},
        "agents": {
            "Orchestrator": _native(sub_agents=list(sub_agents), orchestrator=orchestrator or {}),
            "Pods": _native(description="Kubernetes pods", mcp_servers=["tools"]),
            "Network": _native(description="Network paths", mcp_servers=["tools"]),
            "Logs": _native(description="Application logs", mcp_servers=["tools"]),
            **(agents or {}),
        },
        "agent_chains": {"triage": {"alert_types": ["triage"], "stages": [
            {"name": "investigate", "agents": [{"name": "Orchestrator"}]}]}},
    })


def _orchestrator(session) -> AgentExecution:
    return AgentExecution.objects.get(session=session, parent_execution__isnull=True)


def _in_flight() -> str:
    """The arguments of every task the workers hold (running or prefetched), as the workers report them."""
    inspect = app.control.inspect(timeout=1.0)
    active, reserved = inspect.active(), inspect.reserved()
    assert active is not None and reserved is not None, "no worker answered the inspection"
    return " ".join(str(t.get("args")) for tasks in [*active.values(), *reserved.values()] for t in tasks)


@pytest.mark.timeout(180)
def test_orchestrator_dispatches_waits_without_a_task_and_cites_two_sub_agents(scripted_config, worker):
    _config(scripted_config, {
        "Orchestrator": [
            _dispatch(("Pods", "Is api-1 running?"), ("Network", "Can api-1 reach db:5432?")),
            {"tool_calls": [{"name": "tarsy.list_agents"}, *_dispatch(("Logs", "What does api-1 log?"))["tool_calls"]]},
            {"text": "api-1 runs but cannot reach its database {evidence}."},
        ],
        "Pods": [_echo("api-1 Running"), {"text": "api-1 is Running {evidence}."}],
        "Network": [_echo("connection refused to db:5432", latency_ms=5000),
                    {"text": "db:5432 refuses connections {evidence}.", "latency_ms": 3000}],
        "Logs": [_echo("ERROR db timeout", latency_ms=5000), {"text": "api-1 logs db timeouts {evidence}."}],
    })
    proc = worker(concurrency=3)
    session = session_submit(alert_type="triage", data={"pod": "api-1"})
    wait_for(lambda: AgentExecution.objects.filter(session=session, agent_name="Logs").exists(), timeout=60,
             message="the third dispatch")
    parent = _orchestrator(session)

    def parked() -> bool:
        parent.refresh_from_db()
        return parent.status == "waiting" and parent.iterations_completed >= 2

    wait_for(parked, timeout=30, message="the orchestrator to park")
    running = AgentExecution.objects.filter(parent_execution=parent).exclude(
        status__in=["completed", "failed", "timed_out", "cancelled"])
    assert running.exists()  # sub-agents still work…
    assert parent.lease_expires_at is None
    child_ids = [str(i) for i in running.values_list("id", flat=True)]

    parked_after = parent.iterations_completed

    def a_sub_agent_task_seen() -> bool:
        held = _in_flight()
        parent.refresh_from_db()
        if parent.status != "waiting" or parent.iterations_completed != parked_after:
            raise AssertionError("a sub-agent ended before the inspection: no view of the orchestrator parked")
        assert str(parent.id) not in held  # the workers hold no task of the orchestrator…
        return any(i in held for i in child_ids)  # …while they run the sub-agents'

    wait_for(a_sub_agent_task_seen, timeout=20, interval=0.2, message="a sub-agent's task in a worker")

    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    children = {c.agent_name: c for c in AgentExecution.objects.filter(parent_execution=parent)}
    assert set(children) == {"Pods", "Network", "Logs"}
    assert all(c.status == "completed" and c.stage_id == parent.stage_id for c in children.values())
    # The third dispatch came after the orchestrator had read the Pods result.
    second = LLMInteraction.objects.get(execution=parent, iteration=2, interaction_type="iteration")
    assert any("Result of sub-agent Pods" in m["content"] for m in second.conversation)
    listing = TimelineEvent.objects.get(execution=parent, event_type="tool_result", metadata__tool_name="list_agents")
    assert '"agent": "Logs", "description": "Application logs"' in listing.content
    assert f'"execution_id": "{children["Pods"].id}", "agent": "Pods", "status": "completed"' in listing.content
    # The final analysis cites evidence of different sub-agents, and the check passes.
    cited = {e["id"] for e in done.citations["valid"]}
    assert done.citations["invalid"] == []
    owners = {TimelineEvent.objects.get(session=done, event_type="tool_result", metadata__evidence_id=i).execution_id
              for i in cited}
    assert {children["Pods"].id, children["Network"].id} <= owners
    assert list(Stage.objects.filter(session=done).values_list("status", flat=True)) == ["completed"]
    assert_no_duplicates(done.id)
    body = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions/{done.id}").json()
    executions = {e["agent_name"]: e for e in body["stages"][0]["executions"]}
    assert executions["Pods"]["parent_execution_id"] == str(parent.id)
    assert executions["Orchestrator"]["parent_execution_id"] is None
    for page in (f"/sessions/{done.id}", f"/sessions/{done.id}/trace"):
        html = Client().get(page).content.decode()
        assert html.count(f'data-parent-execution="{parent.id}"') == 3, page


@pytest.mark.timeout(150)
@pytest.mark.parametrize("on_limit", ["wait", "refuse"])
def test_a_dispatch_beyond_max_concurrent_waits_or_is_refused(scripted_config, worker, on_limit):
    _config(scripted_config, {
        "Orchestrator": [
            _dispatch(("Pods", "a"), ("Network", "b"), ("Logs", "c"), ("Pods", "d")),
            {"text": "done {evidence}"},
        ],
        "Pods": [_echo("pods", latency_ms=1500), {"text": "pods ok {evidence}"}],
        "Network": [_echo("net", latency_ms=1500), {"text": "net ok {evidence}"}],
        "Logs": [_echo("logs", latency_ms=1500), {"text": "logs ok {evidence}"}],
    }, orchestrator={"max_concurrent": 3, "on_limit": on_limit})
    proc = worker(concurrency=3)
    session = session_submit(alert_type="triage", data="api-1 down")
    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    parent = _orchestrator(session)
    children = list(AgentExecution.objects.filter(parent_execution=parent).order_by("created_at"))
    results = list(TimelineEvent.objects.filter(execution=parent, event_type="tool_result", iteration=1)
                   .order_by("sequence_number").values_list("content", flat=True))
    if on_limit == "wait":
        assert len(children) == 4 and all(c.status == "completed" for c in children)
        assert '"status": "queued"' in results[3]
        fourth = children[3]  # it started only once a slot had freed
        assert fourth.started_at >= min(c.completed_at for c in children[:3])
    else:
        assert len(children) == 3
        assert "max_concurrent" in results[3]


@pytest.mark.timeout(150)
def test_max_depth_refuses_a_sub_agent_dispatching_its_own(scripted_config, worker):
    _config(scripted_config, {
        "Orchestrator": [_dispatch(("Planner", "dig deeper")), {"text": "concluded"}],
        "Planner": [_dispatch(("Pods", "and deeper")), {"text": "could not dispatch; concluded myself"}],
    }, sub_agents=("Planner",), agents={"Planner": _native(sub_agents=["Pods"])})
    proc = worker(concurrency=2)
    session = session_submit(alert_type="triage", data="api-1 down")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    planner = AgentExecution.objects.get(session=session, agent_name="Planner")
    assert planner.depth == 1 and planner.status == "completed"
    assert not AgentExecution.objects.filter(parent_execution=planner).exists()
    refusal = TimelineEvent.objects.get(execution=planner, event_type="tool_result")
    assert "max_depth" in refusal.content and refusal.metadata["is_error"] is True


@pytest.mark.timeout(150)
def test_a_sub_agent_that_times_out_is_reported_and_the_orchestrator_concludes(scripted_config, worker, beat):
    _config(scripted_config, {
        "Orchestrator": [_dispatch(("Pods", "check pods"), ("Network", "check network")),
                         {"text": "Pods answered; Network timed out."}],
        "Pods": [{"text": "pods fine"}],
        "Network": [{"text": "Thought: " + "slow " * 50, "latency_ms": 30000}],
    }, orchestrator={"timeout": "3s"})
    proc = worker(concurrency=3)
    beat(interval=1.0)
    session = session_submit(alert_type="triage", data="api-1 down")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    network = AgentExecution.objects.get(session=session, agent_name="Network")
    assert network.status == "timed_out"
    parent = _orchestrator(session)
    told = LLMInteraction.objects.filter(execution=parent, interaction_type="iteration").order_by("-iteration")[0]
    assert any("Result of sub-agent Network" in m["content"] and "timed_out" in m["content"]
               for m in told.conversation)
    assert done.final_analysis == "Pods answered; Network timed out."


@pytest.mark.timeout(120)
def test_cancelling_the_session_cancels_every_sub_agent_within_seconds(scripted_config, worker):
    _config(scripted_config, {
        "Orchestrator": [_dispatch(("Pods", "a"), ("Network", "b")), {"text": "never"}],
        "Pods": [{"text": "Thought: " + "looking " * 60, "latency_ms": 30000}],
        "Network": [{"text": "Thought: " + "tracing " * 60, "latency_ms": 30000}],
    }, orchestrator={"timeout": "10m"}, chunk_size=8)
    proc = worker(concurrency=3)
    session = session_submit(alert_type="triage", data="api-1 down")
    wait_for(lambda: TimelineEvent.objects.filter(session=session, status="streaming",
                                                  execution__parent_execution__isnull=False).count() >= 2,
             timeout=60, message="both sub-agents streaming")
    started = time.monotonic()
    session_cancel(session_id=session.id)
    (done,) = wait_terminal([session.id], 15, proc)
    elapsed = time.monotonic() - started
    assert done.status == "cancelled"
    assert elapsed < 6, f"cancel took {elapsed:.1f}s"
    assert set(AgentExecution.objects.filter(session=done).values_list("status", flat=True)) == {"cancelled"}


@pytest.mark.timeout(180)
def test_worker_killed_while_a_sub_agent_streams_loses_and_duplicates_nothing(scripted_config, worker, beat):
    slow = {**_echo("Back-off restarting failed container", latency_ms=4000), "text": "Reading the pod events."}
    _config(scripted_config, {
        "Orchestrator": [_dispatch(("Pods", "Why does api-1 restart?")), {"text": "api-1 restarts {evidence}."}],
        "Pods": [_echo("OOMKilled"), slow, {"text": "api-1 is OOMKilled {evidence}."}],
    }, chunk_size=8, tarsy={"defaults": {"iteration_timeout": "8s"},
                            "queue": {"orphan_threshold": "20s", "max_resumes": 3}})
    first = worker(concurrency=2, TARSY_HARD_LIMIT_GRACE="1")
    beat(interval=1.0)
    session = session_submit(alert_type="triage", data="api-1 restarts")
    wait_for(lambda: TimelineEvent.objects.filter(session=session, iteration=2, status="streaming",
                                                  execution__parent_execution__isnull=False).exists(),
             timeout=60, message="the sub-agent's second iteration to stream")
    first.kill()  # SIGKILL the whole worker mid-stream
    survivor = worker(concurrency=2, TARSY_HARD_LIMIT_GRACE="1")
    (done,) = wait_terminal([session.id], 120, survivor)
    assert done.status == "completed", (done.error_message, survivor.log()[-3000:])
    pods = AgentExecution.objects.get(session=done, agent_name="Pods")  # dispatched once
    assert pods.status == "completed" and pods.resume_count >= 1
    assert pods.final_analysis.startswith("api-1 is OOMKilled")
    assert done.citations["invalid"] == [] and done.citations["valid"]
    assert_no_duplicates(done.id)


@pytest.mark.timeout(120)
def test_a_stage_with_orchestrate_runs_one_orchestrator_over_its_agents(scripted_config, worker):
    scripted_config({
        "Orchestrator": [_dispatch(("Pods", "pods?"), ("Network", "network?")), {"text": "Both checked {evidence}."}],
        "Pods": [_echo("api-1 Running"), {"text": "running {evidence}"}],
        "Network": [_echo("db refused"), {"text": "refused {evidence}"}],
        "executive_summary": ["summary"],
    }, tarsy={
        "mcp_servers": {"tools": TOOLS},
        "defaults": {"iteration_strategy": "native-thinking"},
        "agents": {"Pods": {}, "Network": {"mcp_servers": ["tools"]}},
        "agent_chains": {"triage": {"alert_types": ["triage"], "stages": [
            {"name": "investigate", "orchestrate": True, "orchestrator": {"max_concurrent": 2},
             "agents": [{"name": "Pods", "max_iterations": 7, "mcp_servers": ["tools"]}, {"name": "Network"}]}]}},
    })
    proc = worker(concurrency=3)
    session = session_submit(alert_type="triage", data="api-1 down")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    (stage,) = Stage.objects.filter(session=done)
    assert stage.parallel_type is None and stage.status == "completed"
    parent = _orchestrator(session)
    assert parent.agent_name == "Orchestrator"
    children = {c.agent_name: c for c in AgentExecution.objects.filter(parent_execution=parent)}
    assert set(children) == {"Network", "Pods"}
    # Pods runs with its stage entry's settings: its limit, and the server its agent config does not list.
    assert children["Pods"].max_iterations == 7 != children["Network"].max_iterations
    assert MCPInteraction.objects.filter(execution=children["Pods"], server="tools", success=True).exists()
    assert done.final_analysis.startswith("Both checked [E")


@pytest.mark.timeout(120)
def test_a_sub_agent_concludes_once_it_spent_its_share_of_the_budget(scripted_config, worker):
    small = {"input_tokens": 10, "output_tokens": 1}
    _config(scripted_config, {
        "Orchestrator": [{**_dispatch(("Pods", "pods?")), "usage": small}, {"text": "done", "usage": small}],
        "Pods": [{**_echo("api-1 Running"), "usage": {"input_tokens": 200, "output_tokens": 1}},
                 {"text": "Pods concluded within its share.", "usage": small}],
        "executive_summary": [{"text": "summary", "usage": small}],
    }, orchestrator={"budget_share": 0.1}, tarsy={"defaults": {"budget": {"tokens": 1000}}})
    proc = worker(concurrency=2)
    session = session_submit(alert_type="triage", data="api-1 down")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    assert done.budget_reached is None  # the session's budget is far from reached…
    pods = AgentExecution.objects.get(session=done, agent_name="Pods")
    second = LLMInteraction.objects.get(execution=pods, iteration=2)
    assert second.interaction_type == "forced_conclusion"  # …the sub-agent's share of it is
    assert pods.final_analysis == "Pods concluded within its share."


@pytest.mark.timeout(150)
def test_a_react_orchestrator_dispatches_one_per_reply_and_waits_when_it_calls_nothing(scripted_config, worker):
    def action(agent: str) -> dict:
        return {"text": f'Thought: ask {agent}.\nAction: tarsy.dispatch_agent\n'
                        f'Action Input: {{"agent": "{agent}", "task": "check {agent}"}}'}

    _config(scripted_config, {
        "Orchestrator": [action("Pods"), action("Network"), {"text": "Thought: waiting for both results."},
                         {"text": "Thought: both answered.\nFinal Answer: pods and network checked {evidence}"}],
        "Pods": [_echo("api-1 Running", latency_ms=3000), {"text": "running {evidence}"}],
        "Network": [_echo("db refused"), {"text": "refused {evidence}"}],
    }, agents={"Orchestrator": {"iteration_strategy": "react", "sub_agents": ["Pods", "Network"]}})
    proc = worker(concurrency=3)
    session = session_submit(alert_type="triage", data="api-1 down")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    pods = AgentExecution.objects.get(session=done, agent_name="Pods")
    network = AgentExecution.objects.get(session=done, agent_name="Network")
    assert network.created_at < pods.completed_at  # the second dispatch did not wait for the first result
    assert done.final_analysis.startswith("pods and network checked [E")
    assert done.citations["invalid"] == []


@pytest.mark.timeout(120)
def test_an_orchestrator_cancels_a_sub_agent_it_no_longer_needs(scripted_config, worker):
    _config(scripted_config, {
        "Orchestrator": [
            _dispatch(("Pods", "slow look"), ("Network", "quick look")),
            {"tool_calls": [{"name": "tarsy.cancel_agent", "arguments": {"execution_id": "{sub_agent:Pods}"}}]},
            {"text": "Network answered; the pods look was not needed."},
        ],
        "Pods": [{"text": "Thought: " + "looking " * 60, "latency_ms": 60000}],
        "Network": [{"text": "the network is fine"}],
    }, orchestrator={"timeout": "10m"}, chunk_size=8)
    proc = worker(concurrency=3)
    session = session_submit(alert_type="triage", data="api-1 down")
    (done,) = wait_terminal([session.id], 60, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    pods = AgentExecution.objects.get(session=done, agent_name="Pods")
    assert (pods.status, pods.error_message) == ("cancelled", "Cancelled by its orchestrator")
    assert done.final_analysis == "Network answered; the pods look was not needed."


@pytest.mark.timeout(150)
@pytest.mark.parametrize("chat_agent", [
    {},  # lists no sub-agents: it dispatches those of the session's orchestrator
    {"sub_agents": ["Pods"]},
])
def test_a_chat_reply_dispatches_a_sub_agent_and_answers_with_its_result(scripted_config, worker, chat_agent):
    _config(scripted_config, {
        "Orchestrator": [{"text": "api-1 was down."}],
        "ChatAgent": [_dispatch(("Pods", "Is api-1 running now?")), {"text": "api-1 runs again {evidence}."}],
        "Pods": [_echo("api-1 Running", latency_ms=2000), {"text": "api-1 is Running {evidence}."}],
    }, agents={"ChatAgent": _native(mcp_servers=[], **chat_agent)})
    proc = worker(concurrency=2)
    session = session_submit(alert_type="triage", data="api-1 down")
    (done,) = wait_terminal([session.id], 60, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])

    _, stage = chat_submit(session_id=done.id, content="Is it back?", author="sre")
    wait_for(lambda: Stage.objects.get(id=stage.id).status == "completed", timeout=60, message="the chat reply")
    stage.refresh_from_db()
    reply = AgentExecution.objects.get(stage=stage, parent_execution__isnull=True)
    pods = AgentExecution.objects.get(stage=stage, parent_execution=reply)
    assert pods.agent_name == "Pods" and pods.status == "completed" and pods.task == "Is api-1 running now?"
    assert stage.final_analysis.startswith("api-1 runs again [E")
    # The reply parked while Pods worked, and read its result when it woke.
    assert Event.objects.filter(session_id=done.id, type="execution.status", payload__execution_id=str(reply.id),
                                payload__status="waiting").exists()
    woken = LLMInteraction.objects.get(execution=reply, iteration=2)
    assert woken.interaction_type == "chat"
    assert any("Result of sub-agent Pods" in m["content"] and "api-1 is Running" in m["content"]
               for m in woken.conversation)
    # The sub-agent works on its task, not on the chat's question.
    first = LLMInteraction.objects.get(execution=pods, iteration=1)
    assert first.interaction_type == "iteration"
    sent = "\n".join(m["content"] for m in first.conversation)
    assert "Is api-1 running now?" in sent and "Is it back?" not in sent
    assert_no_duplicates(done.id)
