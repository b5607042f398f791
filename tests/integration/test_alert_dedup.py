"""Intake folds repeats into one session and related alerts into their group's first session; the queue is
ordered by severity, then age, with aging. Real PostgreSQL; no worker (sessions stay as intake left them)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tarsy.models import AlertOccurrence, AlertSession, Event
from tarsy.selectors.queue import queue_position
from tarsy.services.intake.alerts import session_receive, session_submit
from tarsy.services.queue import sessions_pending_next
from tarsy.signals import alert_attached
from tests.support.configdir import write_config

CRASH = {"alertname": "KubePodCrashLooping", "namespace": "payments", "pod": "payments-api-7d9f",
         "description": "Pod is restarting 5 times / 10 minutes", "startsAt": "2026-11-23T10:00:00Z"}
CHAIN = {"alert_types": ["kubernetes"], "stages": [{"name": "investigate", "agents": [{"name": "KubernetesAgent"}]}]}


def _config(tmp_path, chain=None, queue=None):
    write_config(tmp_path / "cfg", tarsy={"agent_chains": {"kubernetes": {**CHAIN, **(chain or {})}},
                                         "queue": queue or {}})


def _receive(data=CRASH, **kwargs):
    return session_receive(data=data, alert_type="kubernetes", **kwargs)


@pytest.mark.django_db
def test_repeat_joins_the_queued_session_as_an_occurrence_with_its_data_masked():
    first = _receive(data={**CRASH, "note": "token=ghp_zyxwvutsrqponmlkjihgfedcba9876543210"})
    secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    repeat = _receive(data={**CRASH, "description": "Pod is restarting 7 times / 10 minutes",
                            "startsAt": "2026-11-23T10:03:00Z", "note": f"token={secret}"}, author="alertmanager")
    assert (first.deduplicated, repeat.deduplicated, repeat.related) == (False, True, False)
    assert repeat.session.id == first.session.id
    assert AlertSession.objects.count() == 1
    session = AlertSession.objects.get()
    assert session.occurrence_count == 2 and session.last_seen_at is not None
    occurrence = AlertOccurrence.objects.get()
    assert (occurrence.kind, occurrence.author) == ("occurrence", "alertmanager")
    assert "7 times" in occurrence.alert_data and secret not in occurrence.alert_data
    assert "ghp_" not in session.alert_data  # masked before the fingerprint: two secrets, one alert
    assert Event.objects.filter(type="session.occurrence", channel="sessions",
                                payload__occurrence_count=2).exists()


@pytest.mark.django_db
def test_attached_signal_says_which_kind(tmp_path):
    _config(tmp_path, chain={"correlation": {"labels": ["namespace"]}})
    seen = []

    def receiver(sender, session, data, kind, **kwargs):
        seen.append((kind, str(session.id), "payments" in data))

    alert_attached.connect(receiver)
    try:
        lead = _receive()
        _receive()
        _receive(data={**CRASH, "alertname": "KubeDeploymentReplicasMismatch"})
    finally:
        alert_attached.disconnect(receiver)
    sid = str(lead.session.id)
    assert seen == [("occurrence", sid, True), ("related", sid, True)]


@pytest.mark.django_db
def test_explicit_fingerprint_decides_over_the_data():
    a = _receive(data={"pod": "a"}, fingerprint="am-1234")
    b = _receive(data={"pod": "b"}, fingerprint="am-1234")
    c = _receive(data={"pod": "a"}, fingerprint="am-9999")
    assert b.deduplicated and b.session.id == a.session.id
    assert not c.deduplicated and c.session.id != a.session.id


@pytest.mark.django_db
def test_completed_session_absorbs_repeats_within_the_window_only(tmp_path):
    _config(tmp_path, chain={"dedup": {"window": "10m"}})
    first = _receive()
    AlertSession.objects.filter(id=first.session.id).update(status="completed", completed_at=timezone.now())
    assert _receive().session.id == first.session.id
    AlertSession.objects.filter(id=first.session.id).update(completed_at=timezone.now() - timedelta(minutes=11))
    later = _receive()
    assert not later.deduplicated and later.session.id != first.session.id


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["failed", "cancelled", "timed_out", "cancelling"])
def test_a_repeat_of_a_failed_or_cancelled_investigation_starts_a_new_one(status):
    first = _receive()
    AlertSession.objects.filter(id=first.session.id).update(status=status, completed_at=timezone.now())
    assert not _receive().deduplicated


@pytest.mark.django_db
def test_dedup_off_queues_every_alert(tmp_path):
    _config(tmp_path, chain={"dedup": "off"})
    assert _receive().session.id != _receive().session.id


@pytest.mark.django_db
def test_configured_key_fields_make_the_fingerprint(tmp_path):
    _config(tmp_path, chain={"dedup": {"key": ["alertname", "namespace"]}})
    first = _receive()
    assert _receive(data={**CRASH, "pod": "payments-api-other"}).session.id == first.session.id
    assert _receive(data={**CRASH, "namespace": "checkout"}).session.id != first.session.id


@pytest.mark.django_db
def test_group_members_join_the_first_session_as_related(tmp_path):
    _config(tmp_path, chain={"correlation": {"labels": ["namespace", "app"], "window": "10m"}})
    lead = _receive(data={**CRASH, "app": "payments-api"})
    member = _receive(data={"alertname": "HighLatency", "namespace": "payments", "app": "payments-api"})
    other = _receive(data={"alertname": "HighLatency", "namespace": "checkout", "app": "checkout"})
    assert member.related and not member.deduplicated and member.session.id == lead.session.id
    assert not other.related and other.session.id != lead.session.id
    session = AlertSession.objects.get(id=lead.session.id)
    assert (session.group_key, session.related_count, session.occurrence_count) == (
        "namespace=payments,app=payments-api", 1, 1)
    assert AlertOccurrence.objects.get(kind="related").session_id == lead.session.id


@pytest.mark.django_db
def test_explicit_group_key_and_the_group_window(tmp_path):
    _config(tmp_path, chain={"correlation": {"window": "5m"}})
    lead = _receive(data={"alert": "db down"}, group_key="incident-42")
    assert _receive(data={"alert": "api 500s"}, group_key="incident-42").session.id == lead.session.id
    AlertSession.objects.filter(id=lead.session.id).update(created_at=timezone.now() - timedelta(minutes=6))
    assert not _receive(data={"alert": "queue backlog"}, group_key="incident-42").related


@pytest.mark.django_db
def test_a_finished_group_lead_takes_no_more_related_alerts():
    lead = _receive(data={"alert": "db down"}, group_key="incident-7")
    AlertSession.objects.filter(id=lead.session.id).update(status="completed", completed_at=timezone.now())
    assert not _receive(data={"alert": "api 500s"}, group_key="incident-7").related


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_identical_alerts_make_one_session():
    errors: list[BaseException] = []
    start = threading.Barrier(10)

    def post(n: int) -> None:
        try:
            start.wait()
            for _ in range(n):
                _receive()
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(5,)) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    session = AlertSession.objects.get()
    assert session.occurrence_count == 50
    assert AlertOccurrence.objects.filter(session=session, kind="occurrence").count() == 49


@pytest.mark.django_db(transaction=True)
def test_dispatch_claims_a_queued_session_while_intake_attaches_a_repeat_to_it():
    from django.db import transaction

    from tarsy.pipeline.dispatch import dispatch_pending

    first = _receive()
    attached, release = threading.Event(), threading.Event()
    claimed: list[list[str]] = []

    def repeat_in_a_long_transaction() -> None:
        try:
            with transaction.atomic():
                _receive()  # the repeat's count update holds the session's row until the commit
                attached.set()
                release.wait(10)
        finally:
            connection.close()

    def dispatch() -> None:
        try:
            claimed.append(dispatch_pending())
        finally:
            connection.close()

    intake = threading.Thread(target=repeat_in_a_long_transaction)
    intake.start()
    assert attached.wait(10)
    dispatcher = threading.Thread(target=dispatch)
    dispatcher.start()
    dispatcher.join(0.5)
    release.set()
    intake.join(10)
    dispatcher.join(10)
    assert claimed == [[str(first.session.id)]]
    assert AlertSession.objects.get().status == "in_progress"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_webhook_deliveries_sharing_alerts_in_opposite_orders_both_land():
    from tarsy.intake.items import Batch, Firing
    from tarsy.services.intake.deliveries import intake_deliver
    from tarsy.signals import session_status_changed

    first, second = (Firing(fingerprint=f"am-{n}", labels={"alertname": n}, data={"alertname": n}) for n in "AB")
    barrier = threading.Barrier(2, timeout=10)
    paused: set[int] = set()
    results: list[object] = []

    def pause_after_the_first_alert(sender, session, **kwargs):
        if threading.get_ident() not in paused:  # each delivery holds its first alert's lock, wants the other's
            paused.add(threading.get_ident())
            barrier.wait()

    def deliver(firing) -> None:
        try:
            results.append(intake_deliver(source="alertmanager", batch=Batch(firing=firing), author="alertmanager"))
        except BaseException as exc:  # surfaced by the assertion below
            results.append(exc)
        finally:
            connection.close()

    session_status_changed.connect(pause_after_the_first_alert)
    try:
        threads = [threading.Thread(target=deliver, args=(order,)) for order in ([first, second], [second, first])]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        session_status_changed.disconnect(pause_after_the_first_alert)
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert sorted(AlertSession.objects.values_list("fingerprint", "occurrence_count")) == [("am-A", 2), ("am-B", 2)]


# ---- queue order -----------------------------------------------------------------------------------------------

def _queued(severity, *, data=None, age_s=0.0):
    session = session_submit(data=data or {"n": severity}, severity=severity)
    if age_s:
        AlertSession.objects.filter(id=session.id).update(created_at=timezone.now() - timedelta(seconds=age_s))
    return str(session.id)


@pytest.mark.django_db
def test_queue_order_is_severity_then_age_and_positions_follow_it():
    from django.db import transaction

    info, warning, critical, high = _queued("info"), _queued("warning"), _queued("critical"), _queued("high")
    with transaction.atomic():
        order = [str(s.id) for s in sessions_pending_next(limit=10)]
    assert order == [critical, high, warning, info]
    positions = {str(s.id): queue_position(s) for s in AlertSession.objects.all()}
    assert [positions[i] for i in order] == [1, 2, 3, 4]


@pytest.mark.django_db
def test_an_alert_waiting_past_the_aging_threshold_goes_before_a_fresh_critical(tmp_path):
    _config(tmp_path, queue={"priority_aging": "1m"})
    old_info = _queued("info", age_s=3 * 60 + 5)  # three severity levels gained
    fresh_critical = _queued("critical")
    recent_info = _queued("info", age_s=60)
    from django.db import transaction

    with transaction.atomic():
        order = [str(s.id) for s in sessions_pending_next(limit=10)]
    assert order == [old_info, fresh_critical, recent_info]


@pytest.mark.django_db
def test_severity_from_data_then_the_alert_type_mapping(tmp_path):
    _config(tmp_path, queue={"severities": {"kubernetes": "high"}})
    assert _receive(data={"pod": "a", "severity": "Critical"}).session.severity == "critical"
    assert _receive(data={"pod": "b", "severity": "page-me"}).session.severity == "high"
    assert _receive(data={"pod": "c"}).session.severity == "high"
    assert _receive(data={"pod": "d"}, severity="info").session.severity == "info"


# ---- what the API and the dashboard show ------------------------------------------------------------------------

@pytest.mark.django_db
def test_api_answers_deduplicated_with_the_existing_session_and_shows_the_counts():
    from rest_framework.test import APIClient

    api = APIClient(REMOTE_ADDR="127.0.0.1")
    body = {"alert_type": "kubernetes", "data": CRASH, "severity": "high"}
    first = api.post("/api/v1/alerts", body, format="json").json()
    second = api.post("/api/v1/alerts", body, format="json")
    assert second.status_code == 202
    answer = second.json()
    assert {k: answer[k] for k in ("session_id", "status", "deduplicated", "related", "occurrence_count")} == {
        "session_id": first["session_id"], "status": "attached", "deduplicated": True, "related": False,
        "occurrence_count": 2}
    assert first["status"] == "queued" and not first["deduplicated"]
    detail = api.get(f"/api/v1/sessions/{first['session_id']}").json()
    assert (detail["occurrence_count"], detail["severity"], len(detail["recent_occurrences"])) == (2, "high", 1)
    listed = api.get("/api/v1/sessions").json()["results"][0]
    assert listed["occurrence_count"] == 2
    refused = api.post("/api/v1/alerts", {**body, "severity": "sev1"}, format="json")
    assert refused.status_code == 400 and "severity" in refused.json()["detail"]


@pytest.mark.django_db
def test_dashboard_shows_counts_group_and_related_alerts(tmp_path):
    from django.test import Client

    _config(tmp_path, chain={"correlation": {"labels": ["namespace"]}})
    lead = _receive(severity="critical")
    _receive()
    _receive(data={"alertname": "HighLatency", "namespace": "payments", "service": "api-gateway"})
    client = Client(REMOTE_ADDR="127.0.0.1")
    listing = client.get("/").content.decode()
    assert "×2 alerts" in listing and "+1 related" in listing and "severity-critical" in listing
    page = client.get(f"/sessions/{lead.session.id}").content.decode()
    assert "namespace=payments" in page and "1 related" in page and "api-gateway" in page


@pytest.mark.django_db
def test_api_and_dashboard_list_the_queue_in_dispatch_order():
    from django.test import Client
    from rest_framework.test import APIClient

    warning, critical, info = _queued("warning"), _queued("critical"), _queued("info")
    queued = APIClient(REMOTE_ADDR="127.0.0.1").get("/api/v1/sessions/active").json()["queued"]
    assert [(q["id"], q["queue_position"]) for q in queued] == [(critical, 1), (warning, 2), (info, 3)]
    page = Client(REMOTE_ADDR="127.0.0.1").get("/").content.decode()
    assert page.index(critical) < page.index(warning) < page.index(info)


@pytest.mark.django_db
def test_a_repeated_related_alert_reaches_the_investigation_once():
    from tarsy.services.occurrences import related_after

    lead = _receive(data={"alert": "db down"}, group_key="incident-9")
    for _ in range(3):
        _receive(data={"alert": "api 500s", "count": 1}, group_key="incident-9")
    _receive(data={"alert": "queue backlog"}, group_key="incident-9")
    fresh = related_after(session_id=lead.session.id, delivered=set())
    assert ["api 500s" in r.alert_data for r in fresh] == [True, False]
    assert AlertSession.objects.get(id=lead.session.id).related_count == 4
    later = related_after(session_id=lead.session.id, delivered={r.id for r in fresh})
    assert later == []
