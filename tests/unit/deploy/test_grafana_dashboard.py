"""deploy/grafana/tarsy-dashboard.json parses, is laid out sanely and queries only metrics TARSy exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tarsy import metrics

DASHBOARD = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "tarsy-dashboard.json"
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum", "_created"),
            "gauge": ("",)}


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def exported_names() -> set[str]:
    """Every sample name TARSy's metrics can produce: process metrics and the database-backed gauges."""
    from prometheus_client.metrics import MetricWrapperBase

    families = [family for value in vars(metrics).values() if isinstance(value, MetricWrapperBase)
                for family in value.describe()]
    families += list(_session_gauge_families())
    return {family.name + suffix for family in families for suffix in SUFFIXES.get(family.type, ("",))}


def _session_gauge_families():
    from prometheus_client.core import GaugeMetricFamily

    # The collector reads the database; its families (names and types) are fixed, so describe them from its code.
    source = Path(metrics.__file__).read_text()
    for name in re.findall(r'GaugeMetricFamily\("(tarsy_[a-z_]+)"', source):
        yield GaugeMetricFamily(name, "")


def queries(dashboard: dict) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def test_every_query_names_only_exported_metrics(dashboard):
    exported = exported_names()
    assert "tarsy_llm_tokens_total" in exported and "tarsy_iteration_duration_seconds_bucket" in exported
    used = {name for expr in queries(dashboard) for name in re.findall(r"\btarsy_[a-z_]+\b", expr)}
    assert used, "the dashboard queries nothing"
    assert used <= exported, f"not exported by TARSy: {sorted(used - exported)}"


def test_dashboard_shows_what_on_call_asks_for(dashboard):
    text = " ".join(queries(dashboard))
    for metric in ("tarsy_sessions", "tarsy_sessions_queued", "tarsy_iteration_duration_seconds_bucket",
                   "tarsy_llm_errors_total", "tarsy_llm_tokens_total", "tarsy_task_queue_wait_seconds_bucket",
                   "tarsy_llm_cost_usd_total", "tarsy_triage_sessions", "tarsy_triage_time_to_claim_seconds_bucket",
                   "tarsy_triage_time_to_resolve_seconds_bucket"):
        assert re.search(rf"\b{metric}\b", text), metric
    assert "by (provider" in text  # tokens and errors per provider


def test_panels_have_unique_ids_fit_the_grid_and_use_the_datasource_variable(dashboard):
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24
        if panel["type"] != "row":
            assert panel["datasource"]["uid"].strip("${}") in variables
            assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"])


def test_database_gauges_are_never_summed_across_web_targets(dashboard):
    """Every web target reports the same database-backed value; a sum would multiply it by the replicas."""
    for expr in queries(dashboard):
        for gauge in ("tarsy_sessions", "tarsy_sessions_active", "tarsy_sessions_queued", "tarsy_triage_sessions"):
            if re.search(rf"\b{gauge}\b(?!_)", expr):
                assert expr.startswith("max"), expr
