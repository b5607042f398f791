"""An orchestrator's sub-agents on the session page, in a real browser: a tree under the orchestrator whose
nodes change status live (queued → active → completed, no reload) and open to their own timelines."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import open_page, shot, tools_server_config, wait_until

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TASKS = {"Pods": "Is api-1 running in namespace prod, and how often did it restart in the last hour? " * 2,
         "Network": "Can api-1 reach db:5432?"}
SCRIPT = {
    "Orchestrator": [
        {"tool_calls": [{"name": "tarsy.dispatch_agent", "arguments": {"agent": agent, "task": task}}
                        for agent, task in TASKS.items()]},
        {"text": "api-1 runs {evidence} but cannot reach its database."},
    ],
    "Pods": [{"tool_calls": [{"name": "test-tools.echo", "arguments": {"text": "api-1 Running, 14 restarts"}}],
              "latency_ms": 4000},
             {"text": "api-1 is Running {evidence}.", "latency_ms": 1500}],
    "Network": [{"tool_calls": [{"name": "test-tools.echo", "arguments": {"text": "db:5432 refused"}}],
                 "latency_ms": 1500},
                {"text": "db:5432 refuses connections {evidence}.", "latency_ms": 1500}],
    "executive_summary": ["api-1 cannot reach its database."],
}
NATIVE = {"iteration_strategy": "native-thinking"}
TARSY = {
    "mcp_servers": {"test-tools": tools_server_config()},
    "agents": {
        "Orchestrator": {**NATIVE, "sub_agents": ["Pods", "Network"], "orchestrator": {"max_concurrent": 1}},
        "Pods": {**NATIVE, "description": "Kubernetes pods", "mcp_servers": ["test-tools"]},
        "Network": {**NATIVE, "description": "Network paths", "mcp_servers": ["test-tools"]},
    },
    "agent_chains": {"triage": {"alert_types": ["triage"], "stages": [
        {"name": "investigate", "agents": [{"name": "Orchestrator"}]}]}},
}
NODE_STATUS = """(agent) => {
  for (const node of document.querySelectorAll('details[data-sub-agent]')) {
    if (node.querySelector('.sub-agent-name').textContent.trim() === agent)
      return node.querySelector('summary [data-exec-status]').textContent.trim();
  }
  return null;
}"""


@pytest.mark.timeout(180)
def test_sub_agents_show_as_a_live_tree_that_opens_to_their_timelines(scripted_config, worker, web, browser):
    scripted_config(SCRIPT, tarsy=TARSY)
    proc = worker(concurrency=2)
    base = web()
    created = httpx.post(f"{base}/api/v1/alerts", json={"alert_type": "triage", "data": "api-1 down"}, timeout=10)
    session_id = created.json()["session_id"]

    page = open_page(browser)
    page.goto(f"{base}/sessions/{session_id}")
    page.evaluate("() => { window.sameDocument = true; }")  # gone if the page reloaded
    try:  # the second sub-agent waits for the first one's slot (max_concurrent 1)
        wait_until(page, f"(agent) => ({NODE_STATUS})(agent) === 'queued'", "Network", timeout=60_000)
    except Exception:
        raise AssertionError(f"no queued sub-agent shown; worker log:\n{proc.log()[-4000:]}") from None
    tree = page.locator(".agent-tree")
    assert tree.count() == 1 and tree.locator("details[data-sub-agent]").count() == 2
    assert page.evaluate(NODE_STATUS, "Pods") in ("pending", "active")
    pods = tree.locator("details[data-sub-agent]").filter(has=page.locator(".sub-agent-name", has_text="Pods"))
    task = pods.locator(".sub-agent-task")
    assert task.inner_text().endswith("…") and task.get_attribute("title") == TASKS["Pods"].strip()
    orchestrator_badge = page.locator(".exec-meta [data-exec-status]").first
    wait_until(page, "() => document.querySelector('.exec-meta [data-exec-status]').textContent.trim() === 'waiting'")
    assert orchestrator_badge.inner_text() == "waiting"

    # Pods' end frees the slot: Network starts, each shown as it happens (the session still runs), no reload.
    wait_until(page, f"(agent) => ({NODE_STATUS})(agent) === 'completed'", "Pods", timeout=60_000)
    wait_until(page, f"(agent) => ['pending', 'active'].includes(({NODE_STATUS})(agent))", "Network")
    assert page.evaluate("() => document.querySelector('.session-head').dataset.status") == "in_progress"
    wait_until(page, f"(agent) => ({NODE_STATUS})(agent) === 'completed'", "Network", timeout=60_000)
    wait_until(page, "() => document.querySelector('.session-head').dataset.status === 'completed'", timeout=60_000)
    assert page.evaluate("() => window.sameDocument") is True

    # A node opens to its own timeline: the full task, its tool call and its answer.
    body = pods.locator(":scope > .sub-agent-body")
    assert not body.is_visible()
    pods.locator(":scope > summary").click()
    assert body.is_visible()
    shot(page, "sub_agent_tree")
    assert TASKS["Pods"].strip() in body.locator(".sub-agent-full-task").inner_text()
    timeline = body.locator('ol.timeline[data-container^="exec-"]')
    assert timeline.locator("li.ev-final_analysis").text_content().count("api-1 is Running") == 1
    assert timeline.locator("li.ev").count() >= 3
    assert "tokens" in pods.locator(".sub-agent-meta").first.inner_text()
    # A citation of a sub-agent's evidence in the final analysis opens that sub-agent's node.
    network = tree.locator("details[data-sub-agent]").filter(has=page.locator(".sub-agent-name", has_text="Network"))
    assert network.get_attribute("open") is None
    page.locator("#final-analysis-text a.cite", has_text="E2").click()
    assert network.get_attribute("open") is not None
    assert page.problems == []
