"""Nothing of a scenario's name reaches the model: a scenario named after its cause would hand a live model the
answer. Reference runs and `--provider` runs (on a fake OpenAI server, at the wire) are submitted with the alert
type a real alert has; the scenario folder's name is in no request."""

from __future__ import annotations

import json

import pytest
import yaml

from agents.config import load_config
from evals.runconfig import write_run_config
from evals.runner import run
from evals.scenario import load_all, select
from tarsy.config import set_config
from tarsy.models import AlertSession, LLMInteraction
from tests.fakes.fake_openai import FakeOpenAI
from tests.support.processes import start_worker

# one of each way a scenario runs: its alert type's chain, an orchestrator over sub-agents, an action stage
NAMES = ["crashloop-missing-dependency", "orchestrated-cpu-limit-cut-cart", "action-herring-scaled-to-zero-no-action"]
ANSWER = "Final Answer: **Root cause:** undetermined — the evidence does not show it."


def test_no_scenario_names_itself_in_what_the_model_reads():
    """The alert, the recorded tool output and the memories are what a model reads of a scenario."""
    for scenario in load_all(select(None)):
        read = json.dumps(scenario.alert.data) + json.dumps(scenario.tools, default=str) + "".join(
            m.text for m in scenario.memories)
        assert scenario.name not in read.lower(), scenario.name


def _leaks(texts: list[str]) -> list[str]:
    return sorted({name for name in NAMES for text in texts if name in text})


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300)
def test_no_request_of_a_reference_or_provider_run_contains_the_scenario_name(tmp_path):
    scenarios = load_all(select(NAMES))
    plan = write_run_config(tmp_path / "reference", scenarios, concurrency=3)
    set_config(load_config(plan.config_dir))
    worker = start_worker(tmp_path, plan.config_dir, concurrency=4, pool="threads", name="ref")
    try:
        results = run(plan, concurrency=3)
    finally:
        worker.stop()
    assert all(r.score.outcome == "pass" for r in results), [(r.scenario, r.score.failed) for r in results]
    sessions = [r.session_id for r in results]
    prompts = [json.dumps(c) for c in LLMInteraction.objects.filter(session_id__in=sessions)
               .values_list("conversation", flat=True)]
    assert len(prompts) >= 3 * len(NAMES) and any("Alert type: kubernetes\n" in p or "Alert type: kubernetes\\n" in p
                                                  for p in prompts)
    assert _leaks(prompts) == []
    assert set(AlertSession.objects.filter(id__in=sessions).values_list("alert_type", flat=True)) == {
        "kubernetes", "metrics"}

    fake = FakeOpenAI(repeat_last=True).start()
    try:
        fake.queue({"text": ANSWER})
        base = tmp_path / "base"
        base.mkdir()
        (base / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": {"gateway": {
            "type": "openai", "model": "gpt-test", "api_key_env": "FAKE_LLM_KEY", "base_url": f"{fake.url}/v1"}}}))
        live = write_run_config(tmp_path / "live", scenarios, provider="gateway", concurrency=3, base_dir=base)
        set_config(load_config(live.config_dir, env={"FAKE_LLM_KEY": "test-key"}))
        worker = start_worker(tmp_path, live.config_dir, concurrency=4, pool="threads", name="live",
                              FAKE_LLM_KEY="test-key")
        try:
            finished = run(live, concurrency=3)
        finally:
            worker.stop()
        sent = [json.dumps(body) for body in fake.bodies()]
    finally:
        fake.stop()
    assert {r.observation.status for r in finished} == {"completed"}
    assert len(sent) >= len(NAMES) and _leaks(sent) == []
