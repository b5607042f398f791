"""The Memory page in a real browser: an engineer corrects a memory's text (masked on the way in) and retires a
memory; both go through the API and the page shows the result."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import open_page, shot

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def memory_ids():
    """Made before the browser starts: the test body runs inside Playwright's loop, where the ORM is refused."""
    from tarsy.services import memories

    keep = memories.memory_create(kind="incident", text="checkout crash loop: config map checkout-config missing")
    drop = memories.memory_create(kind="fact", text="node-3 disk fills with logs")
    return keep.id, drop.id


@pytest.mark.timeout(120)
def test_an_engineer_corrects_and_retires_memories(memory_ids, scripted_config, web, browser):
    keep, drop = memory_ids
    scripted_config({"KubernetesAgent": ["Final Answer: x"]})
    base = web()
    page = open_page(browser)
    page.goto(f"{base}/memories")
    page.fill(f"#memory-text-{keep}", f"checkout needs config map checkout-config; token: {TOKEN}")
    page.click(f"#memory-{keep} button[type=submit]")
    page.wait_for_selector(f"#memory-{keep} .memory-text:has-text('checkout needs config map')")
    assert TOKEN not in page.inner_text(f"#memory-{keep} .memory-text")
    page.click(f"#memory-{drop} button.memory-retire")
    page.wait_for_selector(f"#memory-{drop}.memory-retired")
    shot(page, "memory-page")
    body = httpx.get(f"{base}/api/v1/memories/{drop}", timeout=10).json()
    assert body["state"] == "retired" and body["retired_reason"] == "retired by an engineer"
    assert httpx.get(f"{base}/api/v1/memories/{keep}", timeout=10).json()["state"] == "active"
    assert page.problems == []


@pytest.fixture
def held_id():
    from tarsy.models import Memory
    from tarsy.services import memories

    held = memories.memory_create(kind="fact", text="OOMKilled pods in shop come from the checkout memory limit",
                                  labels={"namespace": "shop"})
    Memory.objects.filter(id=held.id).update(state="pending", review_reason="its session was flagged as a "
                                             "suspected prompt injection: the alert (ignore_instructions)")
    return held.id


@pytest.mark.timeout(120)
def test_an_engineer_sees_why_a_memory_waits_and_approves_it(held_id, scripted_config, web, browser):
    scripted_config({"KubernetesAgent": ["Final Answer: x"]})
    base = web()
    page = open_page(browser)
    page.goto(f"{base}/memories?state=pending")
    assert "Waiting for review: its session was flagged" in page.inner_text(f"#memory-{held_id} .memory-held")
    page.click(f"#memory-{held_id} button.memory-approve")
    page.wait_for_selector("#memory-empty")  # reloaded: no longer among the pending
    assert httpx.get(f"{base}/api/v1/memories/{held_id}", timeout=10).json()["state"] == "active"
    assert page.problems == []
