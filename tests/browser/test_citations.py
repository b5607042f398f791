"""Citations on the session page, in a real browser: a cited id is a link that reveals, scrolls to and
highlights its evidence event (even in another agent's tab); an invalid one is marked invalid."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import open_page, shot, tools_server_config, wait_until

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ALERT = '{"alertname": "PodCrashLooping", "namespace": "prod", "pod": "api-1"}'
SCRIPT = {
    "Pods": [
        {"tool_calls": [{"name": "test-tools.pod_info", "arguments": {"namespace": "prod", "pod": "api-1"}}]},
        {"tool_calls": [{"name": "test-tools.echo", "arguments": {"text": "api-1 restarted 14 times"}}]},
        {"text": "api-1 in prod restarts again and again {evidence}."},
    ],
    "Network": [
        {"text": 'Thought: check the database.\nAction: test-tools.echo\nAction Input: {"text": "db:5432 refused"}'},
        {"text": 'Thought: again.\nAction: test-tools.echo\nAction Input: {"text": "db:5432 still refused"}'},
        {"text": "Thought: enough.\nFinal Answer: The database refuses connections {evidence}."},
    ],
    "SynthesisAgent": ["## Root cause\n\napi-1 crash-loops because its database refuses connections {evidence} "
                       "in [A:namespace]. The node is also down [E9]."],
    "executive_summary": ["api-1 crash-loops: its database refuses connections."],
}
TARSY = {
    "mcp_servers": {"test-tools": tools_server_config()},
    "agents": {"Pods": {"mcp_servers": ["test-tools"], "iteration_strategy": "native-thinking"},
               "Network": {"mcp_servers": ["test-tools"]}},
    "agent_chains": {"parallel": {"alert_types": ["parallel"], "stages": [
        {"name": "investigate", "agents": [{"name": "Pods"}, {"name": "Network"}]}]}},
}

# The first citation link whose evidence sits in an agent tab that is not shown.
HIDDEN_TARGET = """() => {
  for (const link of document.querySelectorAll('#final-analysis-text a.cite[data-cite-event]')) {
    const node = document.querySelector(`li.ev[data-event-id="${link.dataset.citeEvent}"]`);
    const panel = node && node.closest('[role="tabpanel"]');
    if (panel && panel.hidden) return link.dataset.citeEvent;
  }
  return null;
}"""
IN_VIEW = """(id) => {
  const box = document.querySelector(`li.ev[data-event-id="${id}"]`).getBoundingClientRect();
  return box.height > 0 && box.top >= 0 && box.bottom <= window.innerHeight;
}"""


@pytest.mark.timeout(180)
def test_a_citation_link_scrolls_to_its_evidence_and_invalid_ones_are_marked(scripted_config, worker, web,
                                                                             browser):
    scripted_config(SCRIPT, tarsy=TARSY)
    proc = worker(concurrency=2)
    base = web()
    created = httpx.post(f"{base}/api/v1/alerts", json={"alert_type": "parallel", "data": ALERT}, timeout=10)
    session_id = created.json()["session_id"]

    page = open_page(browser, height=700)
    page.goto(f"{base}/sessions/{session_id}")
    try:
        page.wait_for_selector("#citations", timeout=90_000)
    except Exception:
        raise AssertionError(f"no citations shown; worker log:\n{proc.log()[-4000:]}") from None
    citations = httpx.get(f"{base}/api/v1/sessions/{session_id}", timeout=10).json()["citations"]
    assert sorted(c["id"] for c in citations["valid"]) == ["A:namespace", "E1", "E2", "E3", "E4"]
    assert [c["id"] for c in citations["invalid"]] == ["E9"]

    final = page.locator("#final-analysis-text")
    assert final.locator("a.cite[data-cite-event]").count() == 4
    invalid = final.locator(".cite-invalid")
    assert invalid.inner_text() == "E9" and "not a tool result of this session" in invalid.get_attribute("title")
    assert page.locator("#citations").get_attribute("id") and "1 invalid" in page.inner_text("#citations")

    # Each agent's answer and the synthesis on the timeline link their citations too (hidden tabs included).
    answers = page.locator("li.ev-final_analysis")
    assert answers.locator("a.cite[data-cite-event]").count() == 8  # 2 + 2 by the agents, 4 by the synthesis
    assert answers.locator(".cite-invalid").count() == 1

    target = page.evaluate(HIDDEN_TARGET)
    assert target, "every cited event is already visible: the tab switch would go untested"
    assert not page.evaluate(IN_VIEW, target)
    final.locator(f'a.cite[data-cite-event="{target}"]').click()
    node = page.locator(f'li.ev[data-event-id="{target}"]')
    node.wait_for(state="visible")
    wait_until(page, IN_VIEW, target)
    assert "cite-target" in node.get_attribute("class")
    assert node.locator("details").evaluate("d => d.open")  # the result is shown, not just its heading
    evidence_id = node.get_attribute("data-evidence-id")
    assert evidence_id in {c["id"] for c in citations["valid"]}
    assert page.url.endswith(f"#event-{target}")
    shot(page, "citations")
    assert not page.problems, page.problems
