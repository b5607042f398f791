"""An honest demo for every source (#45): an alert from Alertmanager, Grafana, PagerDuty, the JSON API and free text,
investigated by the embedded default (demo LLM, demo cluster). Each analysis and its executive summary name the
alert's own subject, and the summary's root cause is the analysis's, word for word: never another workload's
diagnosis passed off as this alert's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from tests.support.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "webhooks"
DONE = ("completed", "failed", "timed_out", "cancelled")


def _fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def _pagerduty() -> dict:
    """The incident of the #45 finding: blamed on a DNS problem in inventory-api before."""
    body = _fixture("pagerduty_incident_triggered.json")
    body["event"]["data"]["title"] = "analytics-etl pods not starting in namespace analytics after deploy"
    return body


# source → (how it is posted, what the analysis and the summary must both name, what the cause must not be)
SOURCES = {
    "alertmanager": (("alerts/alertmanager", _fixture("alertmanager_v4.json")), ["checkout-7d9f8b6c5-x2lqp",
                                                                                 "payments"], []),
    "grafana": (("alerts/grafana", _fixture("grafana.json")), ["db-1"], []),
    "pagerduty": (("alerts/pagerduty", _pagerduty()), ["analytics-etl", "analytics", "report-api"],
                  ["inventory-api", "stock-cache"]),
    "json": (("alerts", {"alert_type": "kubernetes", "data": {"alertname": "KubePodCrashLooping", "namespace": "shop",
                                                               "pod": "orders-db-0"}}), ["orders-db-0", "OOMKilled"],
             []),
    "text": (("alerts", {"alert_type": "kubernetes", "data": "node worker-2 NotReady"}), ["worker-2"],
             ["OOMKilled", "orders-db"]),
}


def _plain(text: str) -> str:
    """Markdown and citations off, as the summary writes the cause."""
    return re.sub(r"[*`]", "", re.sub(r"\s*\[[EM]\d+\]", "", text)).strip().rstrip(".")


def _post(base: str, path: str, body: dict) -> str:
    response = httpx.post(f"{base}/api/v1/{path}", json=body, timeout=30)
    assert response.status_code == 202, response.text
    answer = response.json()
    return answer["session_id"] if "session_id" in answer else answer["sessions"][0]["session_id"]


def test_every_source_gets_an_analysis_and_summary_about_its_own_subject_that_agree(embedded_server):
    base, proc = embedded_server
    ids = {source: _post(base, *posted) for source, (posted, _, _) in SOURCES.items()}

    def finished():
        bodies = {s: httpx.get(f"{base}/api/v1/sessions/{i}", timeout=10).json() for s, i in ids.items()}
        return bodies if all(b["status"] in DONE for b in bodies.values()) else None

    try:
        bodies = wait_for(finished, timeout=200, interval=0.5, message="one investigation per source")
    except AssertionError:
        raise AssertionError(proc.log()[-5000:]) from None
    for source, (_, subject, never) in SOURCES.items():
        body = bodies[source]
        assert body["status"] == "completed", (source, body["error_message"])
        analysis, summary = body["final_analysis"], body["executive_summary"]
        cause = next(line for line in analysis.splitlines() if line.startswith("**Root cause:**"))
        for name in subject:
            assert name in cause and name in summary, (source, name, cause, summary)
        for name in never:
            assert name not in cause and name not in summary, (source, name, cause, summary)
        said = summary.removeprefix("Root cause: ").split(" (Summary by the demo investigator.)")[0]
        assert said.rstrip(".") == _plain(cause.removeprefix("**Root cause:**")), (source, said, cause)
