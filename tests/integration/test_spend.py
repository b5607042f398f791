"""Spend accounting and budgets through the real pipeline: real workers, Redis and PostgreSQL, scripted LLM."""

from __future__ import annotations

import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tarsy.models import AlertSession, LLMInteraction, MCPInteraction, TimelineEvent
from tarsy.services.intake.alerts import session_submit
from tests.support.configdir import scripted_provider, write_config
from tests.support.processes import wait_for
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOOLS_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "tools_server.py")
PRICING = {"input_per_mtok": "1.50", "output_per_mtok": "6.00", "cached_input_per_mtok": "0.25",
           "thinking_per_mtok": "12.00", "as_of": "2026-11-01"}
LOOK = "Thought: look at the pod first.\nAction: none.none\nAction Input: {}"
FINAL = "Thought: enough.\nFinal Answer: {}"


def _api() -> APIClient:
    return APIClient(REMOTE_ADDR="127.0.0.1")


def _priced(script, **extra) -> dict:
    return {**scripted_provider(script), "pricing": PRICING, **extra}


@pytest.mark.timeout(120)
def test_priced_provider_gives_the_exact_cost_per_call_execution_stage_session_chain_and_day(config_dir, worker):
    script = {
        "KubernetesAgent": [
            {"text": LOOK, "usage": {"input_tokens": 1000, "cached_tokens": 400, "output_tokens": 200}},
            {"text": FINAL.format("web-1 lacks its config map."),
             "usage": {"input_tokens": 2000, "cached_tokens": 1000, "output_tokens": 300, "thinking_tokens": 100}},
        ],
        "executive_summary": [{"text": "web-1 lacks its config map.",
                               "usage": {"input_tokens": 500, "output_tokens": 50}}],
    }
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "priced"},
        "agents": {"KubernetesAgent": {"mcp_servers": []}},
        "agent_chains": {"unpriced-chain": {"alert_types": ["unpriced"], "llm_provider": "unpriced",
                                           "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]}},
    }, providers={"priced": _priced(script), "unpriced": scripted_provider(script)})
    proc = worker(concurrency=1)
    priced = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    unpriced = session_submit(alert_type="unpriced", data="pod web-2 CrashLoopBackOff")
    done = wait_terminal([priced.id, unpriced.id], 90, proc)
    assert [s.status for s in done] == ["completed", "completed"], [s.error_message for s in done]

    # (600 × 1.50 + 400 × 0.25 + 200 × 6) / 1e6 = 0.0022; (1000 × 1.50 + 1000 × 0.25 + 300 × 6 + 100 × 12) / 1e6
    # = 0.00475; the executive summary (500 × 1.50 + 50 × 6) / 1e6 = 0.00105 is the session's, not the stage's.
    calls = list(LLMInteraction.objects.filter(session_id=priced.id).order_by("id")
                 .values_list("interaction_type", "cached_tokens", "cost_usd"))
    assert calls == [("iteration", 400, Decimal("0.0022")), ("iteration", 1000, Decimal("0.00475")),
                     ("executive_summary", 0, Decimal("0.00105"))]
    body = _api().get(f"/api/v1/sessions/{priced.id}").json()
    assert Decimal(body["cost_usd"]) == Decimal("0.008") and body["unpriced_calls"] == 0
    assert (body["cached_tokens"], body["input_tokens"]) == (1400, 3500)
    stage = body["stages"][0]
    assert Decimal(stage["cost_usd"]) == Decimal(stage["executions"][0]["cost_usd"]) == Decimal("0.00695")
    assert body["budget_reached"] is None
    summary = _api().get(f"/api/v1/sessions/{priced.id}/summary").json()
    assert (Decimal(summary["cost_usd"]), summary["tokens"]["cached_tokens"]) == (Decimal("0.008"), 1400)

    # A model without a price: unknown, never 0.
    other = _api().get(f"/api/v1/sessions/{unpriced.id}").json()
    assert other["cost_usd"] is None and other["unpriced_calls"] == 3
    assert other["stages"][0]["cost_usd"] is None
    by_cost = [row["id"] for row in _api().get("/api/v1/sessions?ordering=-cost_usd").json()["results"]]
    assert by_cost == [str(priced.id), str(unpriced.id)]
    listed = {row["id"]: row for row in _api().get("/api/v1/sessions").json()["results"]}
    assert Decimal(listed[str(priced.id)]["cost_usd"]) == Decimal("0.008")
    assert listed[str(unpriced.id)]["cost_usd"] is None
    interactions = _api().get(f"/api/v1/sessions/{unpriced.id}/interactions").json()["llm_interactions"]
    assert {i["cost_usd"] for i in interactions} == {None}

    by_chain = _api().get("/api/v1/spend?group_by=chain").json()
    chains = {g["key"]: g for g in by_chain["groups"]}
    assert Decimal(chains["kubernetes"]["cost_usd"]) == Decimal("0.008")
    assert (chains["unpriced-chain"]["calls"], chains["unpriced-chain"]["unpriced_calls"]) == (3, 3)
    (today,) = _api().get("/api/v1/spend?group_by=day").json()["groups"]
    assert Decimal(today["cost_usd"]) == Decimal("0.008") and today["sessions"] == 2


@pytest.mark.timeout(150)
def test_tool_call_budget_forces_the_conclusion_and_completes_with_the_marker(config_dir, worker):
    call = "Thought: check once more.\nAction: tools.echo\nAction Input: {{\"text\": \"probe {}\"}}"
    script = {
        "KubernetesAgent": [call.format(1), call.format(2),
                            FINAL.format("Partial: the probes answer; the fault is upstream.")],
        "Reviewer": [FINAL.format("should never run")],
        "executive_summary": ["Probes fine; fault upstream."],
    }
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "priced", "budget": {"tool_calls": 5}},
        "mcp_servers": {"tools": {"transport": {"type": "stdio", "command": sys.executable,
                                                "args": [TOOLS_SERVER, "stdio"]}}},
        "agents": {"KubernetesAgent": {"mcp_servers": ["tools"]}, "Reviewer": {"mcp_servers": []}},
        "agent_chains": {"kubernetes": {"alert_types": ["kubernetes"], "budget": {"tool_calls": 2}, "stages": [
            {"name": "investigate", "agents": [{"name": "KubernetesAgent"}]},
            {"name": "review", "agents": [{"name": "Reviewer"}]},
        ]}},
    }, providers={"priced": _priced(script)})
    proc = worker(concurrency=1)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    (done,) = wait_terminal([session.id], 120, proc)

    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    assert MCPInteraction.objects.filter(session=done).count() == 2  # the chain's limit, not the defaults' 5
    assert list(LLMInteraction.objects.filter(session=done).exclude(interaction_type="executive_summary")
                .order_by("iteration").values_list("iteration", "interaction_type")) == [
        (1, "iteration"), (2, "iteration"), (3, "forced_conclusion")]
    # The forced call offers no tools and its answer is the session's final analysis; no later stage ran.
    assert done.final_analysis == "Partial: the probes answer; the fault is upstream."
    assert list(done.stages.values_list("name", "status")) == [("investigate", "completed")]
    assert done.budget_reached["kind"] == "tool_calls"
    assert (done.budget_reached["limit"], done.budget_reached["used"]) == (2, 2)
    (event,) = TimelineEvent.objects.filter(session=done, event_type="budget_reached")
    assert event.metadata == {"kind": "tool_calls", "limit": 2, "used": 2}
    assert "tool calls 2 of 2" in event.content
    body = _api().get(f"/api/v1/sessions/{done.id}").json()
    assert body["budget_reached"]["kind"] == "tool_calls" and body["status"] == "completed"
    page = _api().get(f"/sessions/{done.id}").content.decode()
    assert "Budget reached" in page


@pytest.mark.timeout(180)
def test_daily_spend_limit_holds_new_sessions_queued_until_it_is_raised(config_dir, worker, beat):
    script = {"KubernetesAgent": [{"text": FINAL.format("done"), "usage": {"input_tokens": 10_000}}],
              "executive_summary": [{"text": "done", "usage": {"input_tokens": 0}}]}

    def configure(limit: str) -> None:
        write_config(config_dir, tarsy={"defaults": {"llm_provider": "priced"},
                                        "agents": {"KubernetesAgent": {"mcp_servers": []}},
                                        "system": {"daily_spend_limit_usd": limit}},
                     providers={"priced": _priced(script)})

    configure("0.01")  # one session costs 10 000 × 1.50 / 1e6 = 0.015: the first one uses up the day
    first_worker = worker(concurrency=1)
    first_beat = beat(interval=1.0)
    (first,) = wait_terminal([session_submit(alert_type="kubernetes", data="first").id], 60, first_worker)
    assert first.status == "completed" and first.counters.cost_usd == Decimal("0.015")

    held = session_submit(alert_type="kubernetes", data="second")
    time.sleep(4)  # intake's dispatch and several sweeps have come and gone
    assert AlertSession.objects.get(id=held.id).status == "pending"
    warnings = _api().get("/api/v1/system/warnings").json()["warnings"]
    (budget,) = [w for w in warnings if w["category"] == "budget"]
    assert "Daily spend limit reached: $0.0150 of $0.0100" in budget["message"]
    assert "1 new investigation stays queued" in budget["message"]
    assert _api().get("/api/v1/spend").json()["daily_limit"]["reached"] is True
    banner = _api().get("/").content.decode()
    assert 'id="spend-banner"' in banner and "Daily spend limit reached" in banner

    configure("1.00")  # raised: the processes restart with the new file, as a deployment would
    first_worker.stop()
    first_beat.stop()
    proc = worker(concurrency=1)
    beat(interval=1.0)
    (second,) = wait_terminal([held.id], 60, proc)
    assert second.status == "completed"
    wait_for(lambda: not [w for w in _api().get("/api/v1/system/warnings").json()["warnings"]
                          if w["category"] == "budget"], timeout=5, message="the warning to clear")


@pytest.mark.timeout(150)
def test_tool_calls_past_the_budget_in_one_reply_are_refused_and_the_next_iteration_concludes(config_dir, worker):
    probes = [{"name": "tools.echo", "arguments": {"text": f"probe {i}"}} for i in range(1, 4)]
    script = {"KubernetesAgent": [{"text": "", "tool_calls": probes},
                                  {"text": "Two probes answered; the third was not run."}],
              "executive_summary": ["Two probes answered."]}
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "priced", "iteration_strategy": "native-thinking",
                     "budget": {"tool_calls": 2}},
        "mcp_servers": {"tools": {"transport": {"type": "stdio", "command": sys.executable,
                                                "args": [TOOLS_SERVER, "stdio"]}}},
        "agents": {"KubernetesAgent": {"mcp_servers": ["tools"]}},
    }, providers={"priced": _priced(script)})
    proc = worker(concurrency=1)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    (done,) = wait_terminal([session.id], 120, proc)

    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    assert list(MCPInteraction.objects.filter(session=done).values_list("arguments", flat=True)) == [
        {"text": "probe 1"}, {"text": "probe 2"}]
    refused = TimelineEvent.objects.get(session=done, event_type="error", metadata__reason="budget_reached")
    assert refused.content.startswith("Tool call tools.echo not run")
    assert list(LLMInteraction.objects.filter(session=done, iteration=2).values_list("interaction_type", flat=True)) \
        == ["forced_conclusion"]
    assert done.final_analysis == "Two probes answered; the third was not run."
    assert done.budget_reached["kind"] == "tool_calls"


@pytest.mark.timeout(120)
def test_cost_budget_forces_the_conclusion_once_the_session_has_spent_it(config_dir, worker):
    look = {"text": LOOK, "usage": {"input_tokens": 1000}}  # 1000 × 1.50 / 1e6 = 0.0015 per iteration
    script = {"KubernetesAgent": [look, look, {"text": FINAL.format("Concluded on budget.")}],
              "executive_summary": ["Concluded on budget."]}
    write_config(config_dir, tarsy={"defaults": {"llm_provider": "priced", "budget": {"cost_usd": "0.003"}},
                                    "agents": {"KubernetesAgent": {"mcp_servers": []}}},
                 providers={"priced": _priced(script)})
    proc = worker(concurrency=1)
    (done,) = wait_terminal([session_submit(alert_type="kubernetes", data="pod web-1 OOMKilled").id], 90, proc)

    assert done.status == "completed", done.error_message
    # Two iterations spend 0.003: the third starts at the limit and is the forced conclusion.
    assert list(LLMInteraction.objects.filter(session=done).exclude(interaction_type="executive_summary")
                .order_by("iteration").values_list("interaction_type", flat=True)) == [
        "iteration", "iteration", "forced_conclusion"]
    assert (done.budget_reached["kind"], done.budget_reached["used"]) == ("cost_usd", 0.003)
    assert done.final_analysis == "Concluded on budget."
