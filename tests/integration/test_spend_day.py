"""The daily spend limit's day is the UTC day: yesterday's spend no longer holds dispatch back."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from agents.context import LLMInteractionRecord
from agents.llm.types import Usage
from tarsy.models import AlertSession, LLMInteraction
from tarsy.pipeline.budget import daily_limit_reached, daily_limit_warning, daily_spend
from tarsy.pipeline.dispatch import dispatch_pending
from tarsy.services import interactions, spend
from tarsy.services.intake.alerts import session_submit
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db]

PRICED = {"type": "scripted", "script": [{"text": "x"}], "pricing": {
    "input_per_mtok": "2", "output_per_mtok": "8", "cached_input_per_mtok": "1", "as_of": "2026-11-01"}}


def _spend(session, input_tokens: int) -> None:
    record = LLMInteractionRecord(interaction_type="executive_summary", provider="priced", model="", conversation=[],
                                  usage=Usage(input_tokens=input_tokens, total_tokens=input_tokens))
    interactions.llm_interaction_record(session_id=session.id, execution_id=None, iteration=0, record=record)


def test_yesterdays_spend_does_not_count_against_today(tmp_path):
    write_config(tmp_path, tarsy={"defaults": {"llm_provider": "priced"},
                                  "system": {"daily_spend_limit_usd": "0.01"}}, providers={"priced": PRICED})
    spent = session_submit(alert_type="kubernetes", data="spent")
    AlertSession.objects.filter(id=spent.id).update(status="completed")
    _spend(spent, 6000)  # 6000 × 2 / 1e6 = 0.012 ≥ 0.01
    waiting = session_submit(alert_type="kubernetes", data="waiting")

    assert daily_spend().spent_usd == Decimal("0.012") and daily_limit_reached()
    assert dispatch_pending() == []
    assert AlertSession.objects.get(id=waiting.id).status == "pending"
    assert "1 new investigation stays queued until 00:00 UTC" in daily_limit_warning()

    yesterday = spend.utc_day_start() - timedelta(minutes=1)
    LLMInteraction.objects.filter(session_id=spent.id).update(created_at=yesterday)
    assert daily_spend().spent_usd == 0 and not daily_limit_reached() and daily_limit_warning() is None
    assert [g["key"] for g in spend.spend_grouped(group_by="day", since=yesterday.date(),
                                                  until=timezone.now().date())] == [str(yesterday.date())]


def test_no_limit_configured_never_holds_dispatch(tmp_path):
    write_config(tmp_path, tarsy={"defaults": {"llm_provider": "priced"}}, providers={"priced": PRICED})
    spent = session_submit(alert_type="kubernetes", data="spent")
    _spend(spent, 10_000_000)
    assert daily_spend().limit_usd is None and not daily_limit_reached() and daily_limit_warning() is None


@pytest.mark.parametrize("query", ["group_by=week", "since=yesterday", "since=2026-11-20&until=2026-11-10",
                                   "since=2020-01-01&until=2026-01-01"])
def test_bad_spend_queries_are_json_400(query):
    from rest_framework.test import APIClient

    answer = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/spend?{query}")
    assert answer.status_code == 400 and answer.json()["error"]
