"""The dashboard in a real browser: submit → live timeline → analysis and summary → chat; cancel; no XSS."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import ARTIFACTS, open_page, shot, tools_server_config, wait_until
from tests.support.processes import wait_for

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

XSS_ALERT = ('{"alertname": "PodCrashLooping", "namespace": "prod", "pod": "web-1", '
             '"note": "<script>window.__xss = \'alert-script\'</script><img src=x onerror=\\"window.__xss = '
             '\'alert-img\'\\">"}')
SCRIPT = {
    "KubernetesAgent": [
        {"text": "Thought: The pod restarts. Let me echo what the <b>probe</b> said.\n"
                 "Action: test-tools.echo\n"
                 "Action Input: {\"text\": \"<img src=x onerror=\\\"window.__xss='tool-img'\\\"> probe failed\"}",
         "latency_ms": 2500},
        {"text": "Thought: The probe output explains it.\n"
                 "Final Answer: The **root cause**: web-1 crashes because its config map `web-config` is missing.\n\n"
                 "<script>window.__xss = 'analysis-script'</script>\n\n- Recreate the config map\n- Restart web-1",
         "latency_ms": 2500},
    ],
    "executive_summary": [{"text": "web-1 is crash-looping because config map web-config is missing."}],
    "ChatAgent": [{"text": "Thought: The analysis covers this.\nFinal Answer: The config map web-config was deleted "
                           "by a cleanup job; recreate it from git.", "latency_ms": 1500}],
    "SlowAgent": [{"text": "Thought: " + "checking every pod in the namespace, one at a time. " * 40
                           + "\nFinal Answer: never reached", "latency_ms": 30000}],
}
TARSY = {
    "mcp_servers": {"test-tools": tools_server_config()},
    "agents": {"KubernetesAgent": {"mcp_servers": ["test-tools"]}, "SlowAgent": {"mcp_servers": []}},
    "agent_chains": {"slow": {"alert_types": ["slow"],
                              "stages": [{"name": "survey", "agents": [{"name": "SlowAgent"}]}]}},
}


def _status(base: str, session_id: str) -> str:
    """Read through the API: ORM calls from inside Playwright's event loop would open a connection in
    another context that nobody closes."""
    return httpx.get(f"{base}/api/v1/sessions/{session_id}", timeout=10).json()["status"]


def _no_xss(page) -> None:
    assert page.evaluate("window.__xss") is None, "untrusted HTML ran a script"
    assert not page.problems, page.problems


@pytest.mark.timeout(150)
def test_submit_watch_live_and_chat(scripted_config, worker, web, browser):
    scripted_config(SCRIPT, tarsy=TARSY, chunk_size=6)
    proc = worker()
    base = web()

    sessions = open_page(browser)
    sessions.goto(f"{base}/")
    sessions.wait_for_selector("#running-panel")

    page = open_page(browser)
    page.goto(f"{base}/submit")
    page.wait_for_selector('#alert-type option[value="kubernetes"]', state="attached")
    page.fill("#alert-data", XSS_ALERT)
    page.click("#submit-button")
    page.wait_for_url(f"{base}/sessions/*")
    session_id = page.url.rsplit("/", 1)[1]

    # The timeline grows while the investigation runs: a streaming event shows up before the session ends.
    page.wait_for_selector("li.ev.streaming", timeout=30_000)
    status = _status(base, session_id)
    assert status in ("pending", "in_progress"), f"session already {status}: nothing was seen live"
    page.wait_for_selector("li.ev-mcp_tool_call", timeout=30_000)
    shot(page, "session-mid-investigation")
    # A dropped connection reconnects and catches up from the last event seen.
    page.evaluate("window.tarsySocket.ws.close()")

    # The sessions page, opened before the submit, shows the new session without a reload.
    sessions.wait_for_selector(f'.card[data-session-id="{session_id}"]', timeout=15_000)
    shot(sessions, "sessions-live")

    # Final analysis and executive summary are rendered (as sanitized Markdown).
    try:
        page.wait_for_selector("#executive-summary", timeout=40_000)
    except Exception:
        raise AssertionError(f"no executive summary; worker log:\n{proc.log()}") from None
    assert "missing" in page.inner_text("#executive-summary")
    final = page.locator("#final-analysis-text")
    assert final.locator("strong").inner_text() == "root cause"
    assert "<script>" in final.inner_text()  # shown as text, not run
    wait_until(page, "() => document.querySelector('#session-status').textContent.trim() === 'Completed'")
    assert page.locator("li.ev-final_analysis").count() == 1
    assert page.locator("li.ev.streaming").count() == 0
    assert "<script>" in page.text_content("#alert-data")
    _no_xss(page)

    # Follow-up chat: ask, and the streamed answer appears.
    page.fill("#chat-input", "Why is the config map missing?")
    page.click("#chat-send")
    page.wait_for_selector(".chat-turn li.ev-user_question", timeout=15_000)
    page.wait_for_selector(".chat-turn li.ev-final_analysis", timeout=30_000)
    assert "cleanup job" in page.inner_text(".chat-turn li.ev-final_analysis")
    page.wait_for_selector("#chat-send:not([disabled])")
    page.locator("#chat").scroll_into_view_if_needed()
    shot(page, "session-chat")
    _no_xss(page)

    sessions.wait_for_selector(f'#history tr[data-session-id="{session_id}"] .status-completed', timeout=15_000)
    shot(sessions, "sessions")
    _no_xss(sessions)

    trace = open_page(browser)
    trace.goto(f"{base}/sessions/{session_id}/trace")
    assert trace.locator(".trace-entry.llm").count() >= 3  # two iterations + executive summary (+ chat)
    assert trace.locator(".trace-entry.mcp").count() == 1
    trace.locator(".trace-entry.mcp > summary").click()
    trace.locator(".trace-entry.llm > summary").first.click()
    assert "probe failed" in trace.inner_text(".trace-entry.mcp")
    trace.screenshot(path=str(ARTIFACTS / "trace.png"))
    _no_xss(trace)

    narrow = open_page(browser, width=390, height=844)
    narrow.goto(f"{base}/sessions/{session_id}")
    assert narrow.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    shot(narrow, "session-narrow")


@pytest.mark.timeout(120)
def test_cancel_a_running_session_from_the_page(scripted_config, worker, web, browser):
    scripted_config(SCRIPT, tarsy=TARSY, chunk_size=12)
    worker()
    base = web()
    response = httpx.post(f"{base}/api/v1/alerts", json={"alert_type": "slow", "data": "node pressure"}, timeout=10)
    assert response.status_code == 202, response.text
    session_id = response.json()["session_id"]

    page = open_page(browser)
    page.goto(f"{base}/sessions/{session_id}")
    page.wait_for_selector("li.ev.streaming", timeout=30_000)
    page.click("#cancel-session")
    wait_until(page, "() => document.querySelector('#session-status').textContent.trim() === 'Cancelled'",
               timeout=40_000)
    wait_for(lambda: _status(base, session_id) == "cancelled", timeout=5)
    assert page.locator("#cancel-session").count() == 0
    _no_xss(page)
