"""Approved actions in a real browser, with a real worker and the write-mode MCP test server: an action agent's
proposal appears live on the session page with its server-side dry-run diff; a non-approver sees it without buttons
and reads who may decide; an approver finds it on the Actions page, approves it with a comment on the session page,
and both pages show the decision and then the verified outcome live, without a reload."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import open_page, wait_until
from tests.fakes.mcp_servers.deployments_file_server import read_state, write_state
from tests.integration.test_actions import SERVER
from tests.support.configdir import PROXY_ON_LOOPBACK

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/work/wt/shots")
TARGET = {"namespace": "shop", "name": "api"}
SENDER = {"X-Forwarded-User": "alertmanager"}  # a program behind the proxy
SCRIPT = {
    "Fixer": [
        {"tool_calls": [{"name": "cluster.resources_get", "arguments": TARGET}]},
        {"tool_calls": [{"name": "cluster.resources_scale", "arguments": {
            **TARGET, "replicas": 3, "_justification": "api runs 1 of the 3 replicas it needs and drops requests [E1].",
            "_expected_effect": "api runs 3 ready replicas",
            "_verify": {"tool": "cluster.resources_get", "arguments": TARGET, "expect": "readyReplicas: 3"}}}]},
        {"text": "api was short of replicas; scaled to 3 and verified {evidence}."},
    ],
    "executive_summary": ["api scaled to 3 replicas, verified."],
}


def _config(state: Path) -> dict:
    return {
        "system": PROXY_ON_LOOPBACK,  # the approver and the onlooker are people the proxy names and groups
        "actions": {"enabled": True, "approvers": ["sre-oncall"], "verify_attempts": 3, "verify_interval": "1s"},
        "mcp_servers": {"cluster": {
            "transport": {"type": "stdio", "command": sys.executable, "args": [SERVER, str(state)]},
            "actions": True, "action_tools": ["resources_scale"],
            "dry_run": {"resources_scale": {"argument": "dryRun", "value": "server"}}}},
        "agents": {"Fixer": {"type": "action", "iteration_strategy": "native-thinking", "mcp_servers": ["cluster"]}},
        "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
            {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}},
    }


def _person(browser, user: str, groups: str = ""):
    page = open_page(browser, width=1280, height=1000)
    page.set_extra_http_headers({"X-Forwarded-User": user, "X-Forwarded-Groups": groups})
    return page


@pytest.mark.timeout(240)
def test_an_approver_approves_a_proposal_with_its_dry_run_and_sees_it_verified_live(scripted_config, worker, web,
                                                                                    browser, tmp_path):
    state = tmp_path / "cluster.json"
    write_state(state, {"shop/api": {"replicas": 1, "max_ready": None}})
    scripted_config(SCRIPT, tarsy=_config(state))
    proc = worker(concurrency=2)
    base = web()
    created = httpx.post(f"{base}/api/v1/alerts", json={"alert_type": "repair", "data": {"deployment": "shop/api"}},
                         headers=SENDER, timeout=10)
    session_id = created.json()["session_id"]

    # A non-approver watches the session from the start: the proposal appears live, without buttons.
    mallory = _person(browser, "mallory", "dev")
    mallory.goto(f"{base}/sessions/{session_id}")
    try:
        mallory.wait_for_selector("#actions-panel .action-card.pending", timeout=90_000)
    except Exception:
        raise AssertionError(f"no pending action shown; worker log:\n{proc.log()[-4000:]}") from None
    card = mallory.locator("#actions-panel .action-card.pending")
    assert card.locator("[data-action-decide]").count() == 0
    assert "Only the approvers may approve or reject: sre-oncall" in card.inner_text()
    assert read_state(state)["shop/api"]["replicas"] == 1  # proposed and dry-run: nothing changed
    SHOTS.mkdir(parents=True, exist_ok=True)
    mallory.screenshot(path=str(SHOTS / "actions-non-approver-pending.png"))

    # The approver finds it on the Actions page and opens its session.
    alice = _person(browser, "alice", "sre-oncall")
    alice.goto(f"{base}/actions")
    rows = alice.locator("#pending-actions tbody tr")
    assert rows.count() == 1 and "resources_scale" in rows.inner_text()
    alice.screenshot(path=str(SHOTS / "actions-page.png"))
    rows.locator("a").first.click()
    alice.wait_for_url(f"**/sessions/{session_id}#actions-panel")
    card = alice.locator("#actions-panel .action-card.pending")
    card.wait_for()
    assert card.locator(".diff-del").inner_text() == "-replicas: 1"
    assert card.locator(".diff-add").inner_text() == "+replicas: 3"
    assert card.locator(".diff-add").evaluate("n => getComputedStyle(n).backgroundColor") == "rgb(220, 252, 231)"
    assert '"replicas": 3' in card.locator(".action-arguments").inner_text()
    assert "api runs 3 ready replicas" in card.locator(".action-effect").inner_text()
    assert "readyReplicas: 3" in card.locator(".action-verify").inner_text()
    wait_until(alice, "() => /^in \\d+m \\d+s$/.test(document.querySelector('time.countdown').textContent)")
    evidence = card.locator(".action-justification a.cite[data-cite-event]")
    assert evidence.inner_text() == "E1"
    card.scroll_into_view_if_needed()
    alice.screenshot(path=str(SHOTS / "actions-pending-with-diff.png"), full_page=True)
    evidence.click()  # the citation reveals its evidence on the timeline, as the analysis's citations do
    wait_until(alice, "() => document.querySelector('li.ev.cite-target') !== null")

    alice.fill("#actions-panel form[data-action-form] textarea", "go ahead, diff looks right")
    alice.click("#actions-panel [data-action-decide='approve']")

    # Both pages follow live: decided, then run and verified.
    for person in (alice, mallory):
        try:
            person.wait_for_selector("li[data-action-row][data-outcome='verified']", timeout=90_000)
        except Exception:
            raise AssertionError(f"no verified outcome shown; worker log:\n{proc.log()[-4000:]}") from None
    assert alice.inner_text("#actions-panel #actions-none-pending") == "No action waits for a decision."
    outcome = alice.locator("li[data-action-row] .action-outcome")
    assert "Verified" in outcome.inner_text() and "readyReplicas: 3" in outcome.inner_text()
    decision = alice.inner_text("li[data-action-row] .action-decision")
    assert "Approved by alice" in decision and "go ahead, diff looks right" in decision
    assert read_state(state)["shop/api"]["replicas"] == 3
    alice.locator("#actions-panel").scroll_into_view_if_needed()
    alice.screenshot(path=str(SHOTS / "actions-after-outcome.png"), full_page=True)
    mallory.screenshot(path=str(SHOTS / "actions-non-approver-after-outcome.png"), full_page=True)

    action = httpx.get(f"{base}/api/v1/actions?status=executed", headers=SENDER, timeout=10).json()[0]
    assert (action["decided_by"], action["outcome"], action["dry_run_status"]) == ("alice", "verified", "ran")
    assert alice.problems == [] and mallory.problems == []
