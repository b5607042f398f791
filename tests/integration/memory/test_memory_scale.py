"""Memory at scale: a quota of active memories per alert type, learning that locks only what it updates, and
recall's keyword search served by an index on PostgreSQL (#43)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from agents.memory.reflection import Candidate
from tarsy.models import AlertSession, Memory, MemoryChange
from tarsy.selectors import memories as memory_selectors
from tarsy.services import memories

TEXTS = ["checkout crash-loops when config map checkout-config is missing",
         "payments pods are OOMKilled: the memory limit of 512Mi is too low",
         "search latency rises because of CPU throttling on the search nodes",
         "cart cannot resolve service names while coredns is overloaded",
         "billing certificate expired; cert-manager renewal fixed the handshakes"]


def _configure(scripted_config, **memory):
    scripted_config({"KubernetesAgent": ["Final Answer: x"]}, tarsy={"memory": {"enabled": True, **memory}})


def _learn(text: str, alert_type: str = "kubernetes") -> Memory:
    session = AlertSession.objects.create(alert_data="{}", alert_type=alert_type, chain_id="kubernetes",
                                          status="completed", completed_at=timezone.now())
    [memory] = memories.memory_learn(session_id=session.id, learned=[memories.Learned(Candidate("fact", text))],
                                     alert_type=alert_type, chain_id="kubernetes", alert_labels={}).stored
    return memory


@pytest.mark.django_db
def test_no_alert_type_keeps_more_active_memories_than_its_quota(scripted_config):
    _configure(scripted_config, max_per_alert_type=3)
    now = timezone.now()
    made = [_learn(text) for text in TEXTS[:3]]
    other = _learn(TEXTS[0], alert_type="node")  # another alert type has its own quota
    stale_used, stale_unused, fresh = made
    Memory.objects.filter(id=stale_used.id).update(confirmed_at=now - timedelta(days=200), use_count=9,
                                                   last_used_at=now - timedelta(days=1))  # old but recalled lately
    Memory.objects.filter(id=stale_unused.id).update(confirmed_at=now - timedelta(days=100))
    Memory.objects.filter(id=fresh.id).update(confirmed_at=now - timedelta(days=100), use_count=4)

    newest = _learn(TEXTS[3])
    assert Memory.objects.filter(alert_type="kubernetes", state="active").count() == 3
    assert Memory.objects.get(id=stale_unused.id).state == "retired"  # least recently active, then least used
    assert {m.id for m in Memory.objects.filter(state="active", alert_type="kubernetes")} == \
        {stale_used.id, fresh.id, newest.id}
    retired = Memory.objects.get(id=stale_unused.id)
    assert "quota of 3" in retired.retired_reason
    change = MemoryChange.objects.get(memory_id=stale_unused.id, action="retired")
    assert change.actor == "quota" and change.before["state"] == "active" and "quota of 3" in change.reason
    assert Memory.objects.get(id=other.id).state == "active"

    back = memories.memory_reactivate(memory_id=stale_unused.id, reason="still true", actor="alice")
    assert back.state == "active"  # the reactivated one stays; the quota retires the next in line
    assert Memory.objects.filter(alert_type="kubernetes", state="active").count() == 3
    created = memories.memory_create(kind="fact", text=TEXTS[4], alert_type="kubernetes")
    assert Memory.objects.get(id=created.id).state == "active"
    assert Memory.objects.filter(alert_type="kubernetes", state="active").count() == 3


@pytest.mark.django_db(transaction=True)
def test_learning_never_waits_on_memories_it_does_not_update(scripted_config):
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's (SQLite runs one writer at a time)")
    _configure(scripted_config)
    unrelated = _learn(TEXTS[1])
    held, release = threading.Event(), threading.Event()

    def hold_lock():
        try:
            with transaction.atomic():
                Memory.objects.select_for_update().get(id=unrelated.id)  # a review adjusting it, say
                held.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert held.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")  # a learner that waits for the lock fails instead
        learned = _learn(TEXTS[0])
        assert Memory.objects.get(id=learned.id).state == "active"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        release.set()
        holder.join(30)


@pytest.mark.django_db
def test_recall_s_keyword_search_can_use_the_full_text_index(scripted_config):
    if connection.vendor != "postgresql":
        pytest.skip("the GIN index is PostgreSQL's")
    _configure(scripted_config)
    for text in TEXTS:
        _learn(text)
    # unscoped, so the full-text match is the only indexable condition: its expression must be the index's
    query = memory_selectors.full_text_query(scope=Memory.objects.all(), words=["checkout", "config", "missing"])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a five-row table is scanned otherwise
        plan = query.explain()
    assert "memory_text_fts" in plan, plan
    assert [text for _, text in query] == [TEXTS[0]]


@pytest.mark.django_db
def test_recall_leaves_out_words_most_memories_hold_once_there_are_many(scripted_config):
    if connection.vendor != "postgresql":
        pytest.skip("the column statistics are PostgreSQL's")
    _configure(scripted_config)
    now = timezone.now()

    def analyze():
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE tarsy_memory")

    Memory.objects.bulk_create([Memory(kind="fact", text=f"checkout pods restart on deploy {i}", confirmed_at=now)
                                for i in range(50)])
    analyze()
    assert memory_selectors.distinctive_words(["pods", "checkout"]) == ["pods", "checkout"]  # too few to tell
    Memory.objects.bulk_create([Memory(kind="fact", text=f"payments pods restart on node drain {i}",
                                       confirmed_at=now) for i in range(memory_selectors.PRUNE_ABOVE)])
    analyze()
    assert memory_selectors.distinctive_words(["pods", "checkout", "restarting"]) == ["checkout"]
    assert memory_selectors.distinctive_words(["pods", "restart"]) == ["pods", "restart"]  # nothing left: all
    hits = memory_selectors.keyword_ranking(
        scope=memory_selectors.memories_in_scope(alert_type=None, chain_id=None, labels={}),
        query="checkout pods restarting")
    assert len(hits) == 50 and all("checkout" in Memory.objects.get(id=i).text for i in hits)
