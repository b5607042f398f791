"""`manage.py eval` writes its sessions to a database of its own unless told `--into-main-db`."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connections

from evals.database import eval_database, eval_name
from evals.scenario import SCENARIOS_DIR
from tarsy.models import AlertSession, MCPInteraction, Memory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCENARIO = str(SCENARIOS_DIR / "oomkilled-memory-limit")


def _eval(tmp_path, *extra: str, scenario: str = SCENARIO) -> dict:
    report = tmp_path / "report.jsonl"
    call_command("eval", "--scenario", scenario, "--concurrency", "1", "--config-dir", str(tmp_path / "config"),
                 "--json", str(report), *extra)
    return json.loads(report.read_text().splitlines()[-1])


@pytest.fixture(autouse=True)
def _no_eval_database_left_over():
    """A fresh eval database per run: sessions a previous run left there (its alerts, their dedup) are not this
    test's. PostgreSQL keeps it across test runs; SQLite's file lives in the test's data dir."""
    connection = connections["default"]
    if connection.vendor == "postgresql":
        name = eval_name(connection.settings_dict["NAME"], connection.vendor)
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)} WITH (FORCE)")


@pytest.mark.timeout(240)
def test_eval_sessions_stay_out_of_the_main_database(tmp_path):
    main = str(connections["default"].settings_dict["NAME"])
    totals = _eval(tmp_path)
    assert totals["passed"] == 1
    assert totals["database"] != main and "_eval" in totals["database"]
    assert str(connections["default"].settings_dict["NAME"]) == main  # the main database is back
    assert not AlertSession.all_objects.exists()

    totals = _eval(tmp_path, "--into-main-db")
    assert totals["passed"] == 1 and totals["database"] == main
    assert AlertSession.all_objects.count() == 1


@pytest.mark.timeout(240)
def test_a_recurrence_recalls_its_memory_fixtures_from_the_eval_database(tmp_path):
    """The fixtures go to the eval database, and the `tarsy` MCP server (a stdio child of the in-process worker)
    reads that database, not the one its DATABASE_URL names."""
    totals = _eval(tmp_path, scenario=str(SCENARIOS_DIR / "recurrence-settlement-nightly-lag"))
    assert totals["passed"] == 1
    assert not Memory.objects.exists()  # the main database has none of them
    with eval_database():
        (recall,) = MCPInteraction.objects.filter(server="tarsy", tool="recall_past_investigations")
        assert recall.success
        assert "sftp.clearhouse.example" in recall.result and "nightly" in recall.result
        assert Memory.objects.count() == 2
