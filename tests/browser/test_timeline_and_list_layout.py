"""What a newcomer sees: each tool call drawn once (with its result once) on the session page, and the sessions
list's Summary column whole at a common laptop width."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import open_page, shot, tools_server_config, wait_until
from tests.support.processes import wait_for

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SUMMARY = ("checkout-api restarts because its readiness probe times out while the payments database holds a lock "
           "taken by a long migration; the probe budget is shorter than the lock wait. Dashboard: "
           "https://grafana.example.com/d/b7c1e2f3a4d5/checkout-latency-and-readiness?orgId=1&viewPanel=42&from=now-6h")
SCRIPT = {
    "KubernetesAgent": [
        {"text": "Thought: Let me ask the probe.\nAction: test-tools.echo\n"
                 "Action Input: {\"text\": \"probe-said-42\"}"},
        {"text": "Thought: That explains it.\nFinal Answer: checkout-api fails its probe while the lock is held."},
    ],
    "executive_summary": [{"text": SUMMARY}],
}
INSTANCE = "checkout-api-7d9f8b6c5-x2lqp.payments.svc.prod-eu-west-1.cluster.local:8080"
TARSY = {"mcp_servers": {"test-tools": tools_server_config()},
         "agents": {"KubernetesAgent": {"mcp_servers": ["test-tools"], "iteration_strategy": "react"}}}


def _completed(base: str) -> str:
    answer = httpx.post(f"{base}/api/v1/alerts", json={"alert_type": "kubernetes",
                                                       "data": {"alertname": "ProbeFailing", "namespace": "payments",
                                                                "instance": INSTANCE}},
                        timeout=10).json()
    session_id = answer["session_id"]
    wait_for(lambda: httpx.get(f"{base}/api/v1/sessions/{session_id}", timeout=10).json()["status"] == "completed",
             timeout=60, interval=0.3, message="the session to complete")
    return session_id


def _visible_events_naming(page, tool: str) -> list[str]:
    return page.evaluate("""(tool) => [...document.querySelectorAll('li.ev')]
        .filter((li) => li.offsetParent !== null && [...li.querySelectorAll('code.tool')]
            .some((c) => c.textContent.trim() === tool))
        .map((li) => li.className)""", tool)


@pytest.mark.timeout(150)
def test_a_tool_call_is_drawn_once_with_its_result_once(scripted_config, worker, web, browser):
    scripted_config(SCRIPT, tarsy=TARSY)
    worker()
    base = web()
    session_id = _completed(base)

    page = open_page(browser)
    page.goto(f"{base}/sessions/{session_id}")
    page.wait_for_selector("li.ev-final_analysis")
    shot(page, "session-tool-call-once")
    drawn = _visible_events_naming(page, "test-tools.echo")
    assert len(drawn) == 2, drawn  # the call (arguments, duration) and the result the model read
    assert any("ev-mcp_tool_call" in c for c in drawn) and any("ev-tool_result" in c for c in drawn), drawn
    results = page.evaluate("""() => [...document.querySelectorAll('li.ev pre.data')]
        .filter((pre) => pre.textContent.includes('probe-said-42') && pre.closest('details') &&
                         !pre.closest('li').hidden && !pre.closest('details').querySelector('summary')
                         .textContent.includes('Arguments'))
        .length""")
    assert results == 1  # the echoed result, once
    assert page.problems == []

    sessions = open_page(browser, width=1400, height=900)
    sessions.goto(f"{base}/")
    sessions.wait_for_selector(f'#history tr[data-session-id="{session_id}"]')
    wait_until(sessions, "() => document.fonts.status === 'loaded'")
    shot(sessions, "sessions-list-1400")
    clipped = sessions.evaluate("""() => {
        const wrap = document.querySelector('#history .table-wrap') || document.querySelector('.table-wrap');
        const cell = document.querySelector('#history td.preview');
        return {overflow: wrap.scrollWidth - wrap.clientWidth, width: cell.getBoundingClientRect().width,
                right: cell.getBoundingClientRect().right, edge: wrap.getBoundingClientRect().right,
                text: cell.textContent.trim()};
    }""")
    assert clipped["overflow"] <= 0 and clipped["right"] <= clipped["edge"] + 1, clipped
    assert clipped["width"] >= 250, clipped  # a readable column, not a sliver of one word per line
    preview = clipped["text"]
    assert preview.endswith("…") and SUMMARY.startswith(preview[:-1].rstrip()), preview
    assert SUMMARY[len(preview[:-1].rstrip())] == " ", preview  # cut between words
