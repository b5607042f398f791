"""The Triage view in a real browser, two people at once: bob watches the view while alice claims a session on its
page — bob's view moves it to in progress under alice's name without a reload; bob's own bulk claim of it then
says clearly that alice was first; bob resolves two others from the list; alice resolves hers with a review, and
her page follows bob's reopen."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import open_page, shot, wait_until
from tests.support.configdir import PROXY_ON_LOOPBACK

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOT = Path("/work/wt/triageui-shot.png")


@pytest.fixture
def waiting():
    """Three finished sessions in needs_review, made before the browser starts (the ORM is refused inside
    Playwright's loop)."""
    from django.db.models import F

    from tarsy.models import AlertSession
    from tarsy.services import sessions as session_service
    from tarsy.services.intake.alerts import session_submit

    ids = []
    for pod, severity in (("checkout-7f9c", "critical"), ("web-1", "warning"), ("batch-3", "info")):
        session = session_submit(data=f"pod {pod} CrashLoopBackOff", alert_type="kubernetes",
                                 author="alertmanager")
        AlertSession.all_objects.filter(id=session.id).update(
            severity=severity, status="in_progress", started_at=F("created_at"),
            title=f"{pod} CrashLoopBackOff", final_analysis=f"{pod} crashes: its config map is missing.")
        session_service.session_set_status(session_id=session.id, status="completed", from_statuses=("in_progress",))
        ids.append(str(session.id))
    return ids


BOB = {"X-Forwarded-User": "bob"}


def _card(state: str, session_id: str) -> str:
    return f'#column-{state} li[data-session-id="{session_id}"]'


@pytest.mark.timeout(120)
def test_the_triage_view_follows_another_persons_claim_live(waiting, scripted_config, web, browser):
    first, second, third = waiting
    scripted_config({"KubernetesAgent": ["Final Answer: x"]}, tarsy={"system": PROXY_ON_LOOPBACK})
    base = web()

    bob = open_page(browser, width=1400, height=900)
    bob.set_extra_http_headers({"X-Forwarded-User": "bob"})
    bob.goto(f"{base}/triage")
    assert bob.locator("#column-needs_review li.triage-card").count() == 3
    assert bob.inner_text("#column-in_progress [data-count]") == "0"
    bob.check(f'{_card("needs_review", first)} input.bulk-pick')  # bob means to take it, a moment too late
    assert bob.inner_text("#bulk-count") == "1 selected"

    alice = open_page(browser)
    alice.set_extra_http_headers({"X-Forwarded-User": "alice"})
    alice.goto(f"{base}/sessions/{first}")
    assert alice.inner_text("#triage-status") == "Needs review"
    alice.click("#triage-claim")
    alice.wait_for_selector("#triage-assignee:has-text('alice')")
    assert alice.inner_text("#triage-status") == "In progress"

    # Bob's view, never reloaded, shows the claim: moved to in progress, under alice's name, counts updated.
    bob.wait_for_selector(_card("in_progress", first))
    assert "alice" in bob.inner_text(f'{_card("in_progress", first)} .assignee')
    assert bob.locator(_card("needs_review", first)).count() == 0
    assert bob.inner_text("#column-needs_review [data-count]") == "2"
    assert bob.inner_text("#column-in_progress [data-count]") == "1"
    assert bob.is_checked(f'{_card("in_progress", first)} input.bulk-pick')  # his selection survived the update

    # His bulk claim of it is refused, and says by whom.
    bob.click("#bulk-claim")
    bob.wait_for_selector("#bulk-result:not([hidden])")
    result = bob.inner_text("#bulk-result")
    assert result.startswith("Claimed 0 of 1.") and "assigned to alice" in result, result
    bob.screenshot(path=str(SHOT), full_page=True)

    # Bob resolves the two others from the list as duplicates.
    bob.check(f'{_card("needs_review", second)} input.bulk-pick')
    bob.check(f'{_card("needs_review", third)} input.bulk-pick')
    bob.select_option("#bulk-resolution", "duplicate")
    bob.fill("#bulk-note", "same incident as checkout-7f9c")
    bob.click("#bulk-resolve")
    bob.wait_for_selector(f'{_card("resolved", second)}')
    bob.wait_for_selector(f'{_card("resolved", third)}')
    assert bob.inner_text("#bulk-result") == "Resolved 2 of 2."
    assert bob.inner_text("#column-needs_review [data-count]") == "0"
    wait_until(bob, "() => document.querySelector('#column-resolved .group-counts').innerText.includes('Duplicate')")
    shot(bob, "triage-view")

    # Alice resolves hers in the dialog, with the accuracy review in the same step; bob's view follows.
    alice.click("#triage-resolve-open")
    alice.check('#triage-resolve-form input[name="resolution"][value="actioned"]')
    alice.fill("#triage-note", "recreated the config map")
    alice.check('#triage-resolve-form input[name="triage_rating"][value="accurate"]')
    shot(alice, "triage-resolve-dialog")
    alice.click("#triage-resolve")
    alice.wait_for_selector("#triage-resolution:has-text('Actioned')")
    assert "recreated the config map" in alice.inner_text("#triage-resolution-note")
    assert alice.inner_text("#triage-log").count("alice") >= 2
    alice.wait_for_selector("#review-current:has-text('Accurate')")  # the quality panel follows the review
    shot(alice, "triage-session")
    bob.wait_for_selector(_card("resolved", first))

    # Bob reopens it over the API: alice's panel follows live, with his entry in the log.
    reopened = httpx.post(f"{base}/api/v1/sessions/{first}/triage", json={"action": "reopen", "note": "back again"},
                          headers=BOB, timeout=10)
    assert reopened.status_code == 200, reopened.text
    alice.wait_for_selector("#triage-status:has-text('Needs review')")
    assert "back again" in alice.inner_text("#triage-log") and alice.is_visible("#triage-claim")

    body = httpx.get(f"{base}/api/v1/sessions/{first}/triage", headers=BOB, timeout=10).json()
    assert [(a["actor"], a["action"]) for a in body["activity"]] == [("alice", "claim"), ("alice", "resolve"),
                                                                     ("bob", "reopen")]
    review = httpx.get(f"{base}/api/v1/sessions/{first}/review", headers=BOB, timeout=10).json()["review"]
    assert (review["rating"], review["author"]) == ("accurate", "alice")
    assert bob.problems == [] and alice.problems == []


@pytest.mark.timeout(120)
def test_a_claim_from_a_stale_session_page_says_who_was_first(waiting, scripted_config, web, browser):
    session_id = waiting[0]
    scripted_config({"KubernetesAgent": ["Final Answer: x"]}, tarsy={"system": PROXY_ON_LOOPBACK})
    base = web()
    bob = open_page(browser)
    bob.set_extra_http_headers({"X-Forwarded-User": "bob"})
    bob.route_web_socket("**/ws", lambda ws: None)  # his live socket hears nothing: the page goes stale
    bob.goto(f"{base}/sessions/{session_id}")
    assert bob.inner_text("#triage-status") == "Needs review"

    claimed = httpx.post(f"{base}/api/v1/sessions/{session_id}/triage", json={"action": "claim"},
                         headers={"X-Forwarded-User": "alice"}, timeout=10)
    assert claimed.status_code == 200, claimed.text
    bob.click("#triage-claim")
    bob.wait_for_selector("#triage-error:not([hidden])")
    assert bob.inner_text("#triage-error") == ("Someone else acted first: cannot claim: triage is in_progress "
                                               "(assigned to alice)")
    bob.wait_for_selector("#triage-assignee:has-text('alice')")  # the panel shows the state as it now is
    assert bob.inner_text("#triage-status") == "In progress"
    shot(bob, "triage-conflict")
    assert [p for p in bob.problems if "HTTP 409" not in p] == []
