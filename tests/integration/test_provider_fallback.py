"""Provider fallback on real workers: provider A's wire-level fake throttles for ever or rejects the key, and the
investigation (and its executive summary) continues on provider B; the trace and the timeline say who answered."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tarsy.services.intake.alerts import session_submit
from tests.fakes.fake_gemini import FakeGemini, text
from tests.fakes.fake_openai import FakeOpenAI
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FINAL = "web-1 crashes because configmap app-config is missing."
SUMMARY = "web-1 lacks its configmap."
KEYS = {"FAKE_OPENAI_KEY": "openai-test-key", "FAKE_GEMINI_KEY": "gemini-test-key"}


@pytest.fixture
def fakes():
    primary, backup = FakeOpenAI(repeat_last=True).start(), FakeGemini().start()
    yield primary, backup
    primary.stop()
    backup.stop()


def _configure(scripted_config, primary: FakeOpenAI, backup: FakeGemini) -> None:
    scripted_config({"default": ["unused"]}, tarsy={"defaults": {"llm_provider": "primary",
                                                                "fallback_providers": ["backup"]}},
                    extra_providers={
                        "primary": {"type": "openai", "model": "gpt-test", "api_key_env": "FAKE_OPENAI_KEY",
                                    "base_url": f"{primary.url}/v1"},
                        "backup": {"type": "google", "model": "gemini-2.5-flash", "api_key_env": "FAKE_GEMINI_KEY",
                                   "base_url": backup.url},
                    })


def _investigate(worker) -> dict:
    proc = worker(concurrency=1, TARSY_LLM_BACKOFF_BASE_S="0.01", **KEYS)
    session = session_submit(alert_type="kubernetes", data="pod web-1 in namespace prod is in CrashLoopBackOff")
    (done,) = wait_terminal([session.id], 90, proc)
    api = APIClient(REMOTE_ADDR="127.0.0.1")
    return {"session": api.get(f"/api/v1/sessions/{done.id}").json(),
            "timeline": api.get(f"/api/v1/sessions/{done.id}/timeline").json(),
            "llm": api.get(f"/api/v1/sessions/{done.id}/interactions").json()["llm_interactions"]}


def _calls(llm: list[dict]) -> list[tuple[str, str, bool]]:
    return [(row["interaction_type"], row["provider"], row["success"]) for row in llm]


def _events(timeline) -> list[dict]:
    return timeline["events"] if isinstance(timeline, dict) else timeline


@pytest.mark.timeout(150)
def test_a_provider_throttling_for_ever_hands_the_investigation_to_the_fallback(scripted_config, worker, fakes):
    primary, backup = fakes
    primary.queue({"status": 429, "message": "quota exceeded"})
    backup.queue(text(f"Thought: the configmap is gone.\nFinal Answer: {FINAL}"), text(SUMMARY))
    _configure(scripted_config, primary, backup)

    seen = _investigate(worker)

    session = seen["session"]
    assert (session["status"], session["final_analysis"], session["executive_summary"]) == ("completed", FINAL,
                                                                                            SUMMARY)
    assert _calls(seen["llm"]) == [("iteration", "primary", False), ("iteration", "backup", True),
                                   ("executive_summary", "primary", False), ("executive_summary", "backup", True)]
    assert all("quota exceeded" in row["error_message"] for row in seen["llm"] if not row["success"])
    assert len(primary.requests) == 2 * 4  # each call: the first attempt and three rate-limit retries
    (execution,) = [e for stage in session["stages"] for e in stage["executions"]]
    assert execution["llm_provider"] == "backup"  # the execution's later calls go to the fallback
    events = _events(seen["timeline"])
    # one warning for the iteration, one (on the session) for the executive summary
    switches = [e for e in events if e["metadata"].get("fallback_provider") and e["event_type"] == "error"]
    assert [(e["metadata"]["provider"], e["metadata"]["code"], e["execution_id"] is None) for e in switches] == [
        ("primary", "rate_limit", False), ("primary", "rate_limit", True)]
    (final,) = [e for e in events if e["event_type"] == "final_analysis"]
    assert final["content"] == FINAL
    answered = [e for e in events if e["event_type"] in ("llm_thinking", "final_analysis")
                and e["metadata"].get("fallback_provider") == "backup"]
    assert answered, "the timeline marks what the fallback provider answered"


@pytest.mark.timeout(150)
def test_a_rejected_credential_switches_at_once_without_retries(scripted_config, worker, fakes):
    primary, backup = fakes
    primary.queue({"status": 401, "message": "invalid api key"})
    backup.queue(text(f"Thought: the configmap is gone.\nFinal Answer: {FINAL}"), text(SUMMARY))
    _configure(scripted_config, primary, backup)

    seen = _investigate(worker)

    assert seen["session"]["status"] == "completed" and seen["session"]["final_analysis"] == FINAL
    assert _calls(seen["llm"]) == [("iteration", "primary", False), ("iteration", "backup", True),
                                   ("executive_summary", "primary", False), ("executive_summary", "backup", True)]
    assert len(primary.requests) == 2  # one attempt per call: a rejected key is not retried
    switched = [e for e in _events(seen["timeline"]) if e["event_type"] == "error"
                and e["metadata"].get("fallback_provider") == "backup"]
    assert [e["metadata"]["code"] for e in switched] == ["auth", "auth"]  # the iteration and the executive summary
