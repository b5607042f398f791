"""The demo tour in a real browser against `make run`'s server (embedded mode, demo LLM, no API key), paced as a
person sees it: submit an alert, watch it stream, see the fix proposed, approve it, see it verified, review the
session, submit the next alert about the same workload and see the memory recalled. Screenshots of every step go to
tests/browser/artifacts/demo-tour-*.png."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.browser.conftest import ARTIFACTS, open_page, shot, wait_until
from tests.e2e.conftest import serve_embedded
from tests.support.processes import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PACE_MS = 1500  # slower than tests need, faster than `serve`'s default: long enough to see each step stream
FIRST = {"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "web-7d9c8b6f5-x2k4q"}
NEXT = "orders-db unhealthy in namespace shop"


def _submit(page, base: str, data: str) -> str:
    page.goto(f"{base}/submit")
    wait_until(page, "() => [...document.querySelectorAll('#alert-type option')].some(o => o.value === 'kubernetes')")
    page.select_option("#alert-type", "kubernetes")
    page.fill("#alert-data", data)
    page.click("#submit-button")
    page.wait_for_url("**/sessions/*")
    return page.url.rstrip("/").rsplit("/", 1)[1]


def _view(page, name: str, selector: str) -> None:
    """A screenshot of what a person sees with `selector` scrolled to the top (the timeline paints off-screen
    items lazily, so full-page shots show them blank)."""
    page.locator(selector).first.evaluate("n => n.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _status(page) -> str:
    return page.inner_text("#session-status").strip().lower()


@pytest.mark.timeout(420)
def test_the_demo_tour_investigates_proposes_acts_verifies_scores_learns_and_recalls(browser, tmp_path):
    with serve_embedded(tmp_path, pace_ms=PACE_MS, actions=True) as (base, proc):
        page = open_page(browser, width=1280, height=1000)
        session_id = _submit(page, base, json.dumps(FIRST))
        shot(page, "demo-tour-1-submitted")

        # It streams: a step in progress on the session page, and the session in the dashboard's Running panel.
        page.wait_for_selector("li.ev.streaming", timeout=60_000)
        page.wait_for_timeout(2500)  # a few chunks later, mid-investigation
        _view(page, "demo-tour-2-streaming", "li.ev.streaming")
        overview = open_page(browser, width=1280, height=800)
        overview.goto(f"{base}/")
        wait_until(overview, f"() => document.body.innerText.includes('Running') && "
                             f"document.querySelector('a[href*=\"{session_id}\"]') !== null")
        shot(overview, "demo-tour-2b-running-panel")

        # The remediation stage proposes the fix; the local user is an approver.
        try:
            page.wait_for_selector("#actions-panel .action-card.pending", timeout=120_000)
        except Exception:
            raise AssertionError(proc.log()[-4000:]) from None
        card = page.locator("#actions-panel .action-card.pending")
        assert "resources_set_limits" in card.inner_text() and "512Mi" in card.inner_text()
        assert card.locator(".action-justification a.cite").count() >= 2  # it cites the investigation's evidence
        _view(page, "demo-tour-3-proposed", "#actions-panel")

        page.fill("#actions-panel form[data-action-form] textarea", "raise it, the limit is too low")
        page.click("#actions-panel [data-action-decide='approve']")
        page.wait_for_selector("li[data-action-row][data-outcome='verified']", timeout=90_000)
        outcome = page.inner_text("li[data-action-row] .action-outcome")
        assert "Verified" in outcome and "readyReplicas: 1" in outcome
        _view(page, "demo-tour-4-verified", "#actions-panel")

        wait_for(lambda: _status(page) == "completed", timeout=90, message="the session to complete")
        summary = page.inner_text("#executive-summary")
        assert "orders-db-0" in summary and "OOMKilled" in summary and "verified" in summary
        score = wait_for(lambda: (httpx.get(f"{base}/api/v1/sessions/{session_id}", timeout=10).json()["score"]
                                  or {}).get("score"), timeout=60, message="the automatic score")
        assert score >= 80

        # Review it: rated accurate, it teaches the next investigation.
        page.reload()
        page.check("#review-form input[name=rating][value=accurate]")
        page.fill("#review-feedback", "Right: the database was OOM-killed at 256Mi.")
        page.fill("#review-action", "Approved the 512Mi memory limit.")
        page.click("#review-save")
        wait_until(page, "() => document.querySelector('#review-saved').textContent.trim() !== ''")
        _view(page, "demo-tour-5-summary-and-score", "#summary-title")
        _view(page, "demo-tour-5-reviewed", "#review-form")
        memories = wait_for(lambda: httpx.get(f"{base}/api/v1/memories", timeout=10).json()["results"], timeout=60,
                            message="a memory learned from the reviewed session")
        assert "orders-db" in memories[0]["text"] and memories[0]["evidence_ids"]

        # The next alert about the same workload recalls it, and checks it against the cluster as it is now.
        second = _submit(page, base, NEXT)
        assert second != session_id
        wait_for(lambda: _status(page) == "completed", timeout=120, message="the second session")
        analysis = page.inner_text("#final-analysis-text")
        assert "Recalled from past investigations" in analysis and f"[M{memories[0]['id']}]" in analysis
        assert "orders-db-0 is healthy now" in analysis.replace("`", "")
        assert "memory M" in page.inner_text("#executive-summary")  # the summary says what memory recalls
        _view(page, "demo-tour-6-recalled", "#summary-title")
        page.goto(f"{base}/memories")
        shot(page, "demo-tour-7-memories")
        assert page.problems == [] and overview.problems == []
