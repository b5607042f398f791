"""Quality in a real browser: the panel appears when the live session completes and shows its automatic score;
an engineer's review round-trips through the page and the API with its author; the quality page draws its charts."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.browser.conftest import open_page, shot, tools_server_config
from tests.support.configdir import PROXY_ON_LOOPBACK, scripted_provider
from tests.support.processes import wait_for

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCRIPT = {
    "KubernetesAgent": [
        {"text": "Thought: Check what the probe said.\nAction: test-tools.echo\n"
                 "Action Input: {\"text\": \"readiness probe failed: config map web-config not found\"}",
         "latency_ms": 1500},
        {"text": "Thought: The probe output explains it.\nFinal Answer: web-1 crashes because its config map "
                 "`web-config` is missing [E1].\n\n## Next steps\n- Recreate the config map\n- Restart web-1",
         "latency_ms": 500},
    ],
    "executive_summary": [{"text": "web-1 is crash-looping because config map web-config is missing."}],
}
VERDICT = {"support": "supported", "score": 78, "rationale": "The probe output shows the missing config map; the "
           "analysis does not say why it disappeared.", "tags": ["incomplete_investigation"]}
TARSY = {"system": PROXY_ON_LOOPBACK,  # reviewers are people the proxy names
         "mcp_servers": {"test-tools": tools_server_config()},
         "agents": {"KubernetesAgent": {"mcp_servers": ["test-tools"]}},
         "scoring": {"llm_provider": "scorer"}}


def _api(base: str, method: str, path: str, user: str = "alice", **kwargs) -> httpx.Response:
    """State is read through the API: ORM calls from inside Playwright's event loop would leak a connection."""
    return httpx.request(method, f"{base}/api/v1/{path}", timeout=10, headers={"X-Forwarded-User": user}, **kwargs)


def _submit(base: str, pod: str) -> str:
    """A distinct pod per alert: a repeat of the same alert would join the first session (deduplication)."""
    response = _api(base, "POST", "alerts", json={"alert_type": "kubernetes", "data": f"pod {pod} CrashLoopBackOff"})
    assert response.status_code == 202, response.text
    return response.json()["session_id"]


def _scored(base: str, session_id: str) -> dict:
    def done():
        score = _api(base, "GET", f"sessions/{session_id}").json()["score"]
        return score if score and score["status"] in ("scored", "failed") else None

    return wait_for(done, timeout=60, interval=0.3, message="the session to be scored")


@pytest.mark.timeout(180)
def test_review_round_trip_and_the_quality_page(scripted_config, worker, web, browser):
    scripted_config(SCRIPT, tarsy=TARSY,
                    extra_providers={"scorer": scripted_provider({"scoring": [{"text": json.dumps(VERDICT)}]})})
    proc = worker()
    base = web()

    session_id = _submit(base, "web-1")
    page = open_page(browser)
    page.set_extra_http_headers({"X-Forwarded-User": "alice"})
    page.goto(f"{base}/sessions/{session_id}")
    # Opened while the session runs: the panel appears when it completes, the score when the scorer answers.
    page.wait_for_selector("#score-value", timeout=60_000)
    assert page.inner_text("#score-value") == "78", proc.log()[-3000:]
    assert "incomplete_investigation" in page.inner_text("#score-tags")
    assert "does not say why" in page.inner_text("#score-rationale")
    assert page.inner_text("#review-needed") == "Not reviewed yet."

    # An empty rating is refused on the page; a full review is saved through the API and shown with its author.
    page.click("#review-save")
    assert "Choose accurate" in page.inner_text("#review-error")
    page.check('input[name="rating"][value="inaccurate"]')
    page.fill("#review-feedback", "The config map was deleted by the cleanup job; the analysis missed it.")
    page.fill("#review-action", "Restored web-config from git, disabled the cleanup job")
    page.click("#review-save")
    page.wait_for_selector("#review-current")
    assert "Inaccurate" in page.inner_text("#review-current")
    assert page.inner_text("#review-author") == "alice"
    assert page.inner_text("#review-saved") == "Saved."
    shot(page, "review")
    review = _api(base, "GET", f"sessions/{session_id}/review").json()["review"]
    assert (review["rating"], review["author"]) == ("inaccurate", "alice")
    assert review["action_taken"] == "Restored web-config from git, disabled the cleanup job"

    # Re-score from the page: pending at once, then the new score.
    page.click("#rescore")
    page.wait_for_selector("#score-value", timeout=30_000)
    assert _scored(base, session_id)["status"] == "scored"

    # A second session, reviewed accurate over the API by someone else.
    other = _submit(base, "api-2")
    assert other != session_id
    assert _scored(base, other)["score"] == 78
    saved = _api(base, "POST", f"sessions/{other}/review", user="bob", json={"rating": "accurate"})
    assert saved.status_code == 200 and saved.json()["review"]["author"] == "bob"

    # The list filters by review state and rating.
    page.goto(f"{base}/?review=reviewed&rating=inaccurate")
    rows = page.locator("table.history tbody tr[data-session-id]")
    assert rows.count() == 1 and rows.first.get_attribute("data-session-id") == session_id
    assert page.inner_text("table.history tbody td.score-cell") == "78"

    page.goto(f"{base}/quality")
    page.wait_for_selector("#agreement-matrix")
    assert page.inner_text("#kpi-sessions") == "2" and page.inner_text("#kpi-reviewed") == "2"
    assert page.inner_text("#kpi-agreement").startswith("50%")  # supported ↔ accurate agrees, ↔ inaccurate not
    assert page.locator("svg.chart").count() >= 8
    shot(page, "quality")
    assert not page.problems, page.problems
