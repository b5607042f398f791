"""The browser tab shows a session's state (title mark and favicon), and a watched session notifies when done."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import shot, wait_until

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCRIPT = {
    "KubernetesAgent": [{"text": "Thought: The alert names a crash loop.\nFinal Answer: web-1 crashes because its "
                                 "config map is missing.", "latency_ms": 4000}],
    "executive_summary": [{"text": "web-1 is crash-looping because of a missing config map."}],
}
# The operating system's notification centre is the outside world here: record what the page asks it to show.
RECORD_NOTIFICATIONS = """
window.__notes = [];
const Real = window.Notification;
class Recording extends Real {
  constructor(title, options) { super(title, options); window.__notes.push({title, body: (options || {}).body}); }
}
Recording.requestPermission = (...args) => Real.requestPermission(...args);
Object.defineProperty(Recording, "permission", {get: () => Real.permission});
window.Notification = Recording;
"""


def tab_state(page) -> tuple[str, str | None]:
    return page.title(), page.eval_on_selector('link[rel="icon"]', "l => l.dataset.status || null")


@pytest.mark.timeout(120)
def test_tab_title_and_favicon_follow_the_session_and_a_watched_one_notifies(scripted_config, worker, web, browser):
    scripted_config(SCRIPT)
    base = web()
    response = httpx.post(f"{base}/api/v1/alerts", json={"data": "pod web-1 CrashLoopBackOff"}, timeout=10)
    session_id = response.json()["session_id"]
    label = f"pod web-1 CrashLoopBackOff {session_id[:8]} · TARSy"  # the session's title: the alert's first line

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.grant_permissions(["notifications"], origin=base)
    context.add_init_script(RECORD_NOTIFICATIONS)
    page = context.new_page()
    page.set_default_timeout(30_000)
    problems = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(f"{base}/sessions/{session_id}")
    assert tab_state(page) == (f"◌ {label}", "pending")  # queued: no worker yet
    assert page.eval_on_selector('link[rel="icon"]', "l => l.href").startswith("data:image/svg+xml,")

    watch = page.locator("#watch-session")
    assert watch.is_visible() and watch.get_attribute("aria-pressed") == "false"
    watch.click()
    wait_until(page, "() => document.getElementById('watch-session').getAttribute('aria-pressed') === 'true'")

    worker()
    wait_until(page, f"() => document.title === {f'● {label}'!r}")  # running (the LLM answers after 4 s)
    assert tab_state(page)[1] == "in_progress"
    wait_until(page, f"() => document.title === {f'✓ {label}'!r}", timeout=60_000)
    assert tab_state(page)[1] == "completed"
    notes = page.evaluate("window.__notes")
    assert notes == [{"title": f"TARSy: pod web-1 CrashLoopBackOff {session_id[:8]} completed",
                      "body": "web-1 is crash-looping because of a missing config map."}]
    assert not watch.is_visible()  # nothing left to watch
    shot(page, "session-state-completed")

    page.reload()
    assert tab_state(page) == (f"✓ {label}", "completed")  # a finished session opened later
    assert page.evaluate("window.__notes") == []  # …does not notify again
    assert not problems, problems
    context.close()
