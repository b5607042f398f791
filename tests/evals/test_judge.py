"""`manage.py eval --judge PROVIDER`: the product's scoring rubric, asked of an LLM over the wire (a fake OpenAI
server), judges each run beside the deterministic scorer, and the report shows how often they agree."""

from __future__ import annotations

import json

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from evals.scenario import SCENARIOS_DIR
from tests.fakes.fake_openai import FakeOpenAI

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCENARIO = str(SCENARIOS_DIR / "oomkilled-memory-limit")


@pytest.fixture
def judge_server(tmp_path, settings, monkeypatch):
    server = FakeOpenAI(repeat_last=True).start()
    base = tmp_path / "base"
    base.mkdir()
    (base / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": {"judge": {
        "type": "openai", "model": "gpt-test", "api_key_env": "FAKE_OPENAI_KEY", "base_url": f"{server.url}/v1"}}}))
    monkeypatch.setenv("FAKE_OPENAI_KEY", "test-key")
    settings.TARSY_CONFIG_DIR = str(base)
    yield server
    server.stop()


def _eval(tmp_path, *extra: str) -> tuple[dict, dict]:
    report = tmp_path / "report.jsonl"
    call_command("eval", "--scenario", SCENARIO, "--concurrency", "1", "--config-dir", str(tmp_path / "config"),
                 "--json", str(report), "--into-main-db", *extra)
    run, totals = (json.loads(line) for line in report.read_text().splitlines())
    return run, totals


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("support", "score", "agreement"), [("supported", 92, 1.0), ("unsupported", 20, 0.0)])
def test_the_judge_verdict_is_reported_beside_the_deterministic_one(tmp_path, judge_server, support, score,
                                                                   agreement):
    verdict = {"score": score, "support": support, "rationale": "checked against the evidence", "tags": []}
    judge_server.queue({"text": json.dumps(verdict)})
    run, totals = _eval(tmp_path, "--judge", "judge")
    assert run["outcome"] == "pass"  # the deterministic verdict stays the pass/fail
    assert run["judge"]["support"] == support and run["judge"]["passed"] is (support == "supported")
    assert (totals["judge"], totals["judged"], totals["judge_agreement"]) == ("judge", 1, agreement)
    prompt = json.dumps(judge_server.bodies())
    assert "search-indexer" in prompt and "OOMKilled" in prompt  # the run's analysis went to the judge


def test_an_unknown_judge_is_refused(tmp_path, judge_server):
    with pytest.raises(CommandError, match="--judge nobody: unknown LLM provider"):
        _eval(tmp_path, "--judge", "nobody")
