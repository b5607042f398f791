"""Memories in process, on whichever database the run uses (PostgreSQL full-text or SQLite word overlap):
reflection (masking, merging, bad replies), review adjustments and recall ranking."""

from __future__ import annotations

import copy
import json
import logging
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agents.memory.reflection import Candidate
from tarsy.models import AgentExecution, AlertSession, LLMInteraction, Memory, Stage, TimelineEvent
from tarsy.pipeline.memory.recall import recall, recalled_for_prompt
from tarsy.pipeline.memory.reflect import session_reflect
from tarsy.services import memories, quality
from tarsy.services.recorder import DbRecorder
from tests.support.configdir import scripted_provider

pytestmark = [pytest.mark.django_db]

WEBHOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "webhooks"
PASSWORD = "hunter2xyz"
TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"


def _session(alert_data: str = '{"labels": {"service": "checkout", "namespace": "shop"}}') -> AlertSession:
    """A completed session whose investigation saw one tool result, E1 (what a memory may cite)."""
    session = AlertSession.objects.create(alert_data=alert_data, alert_type="kubernetes", chain_id="kubernetes",
                                          status="completed", final_analysis="checkout lacks its config map.",
                                          completed_at=timezone.now())
    TimelineEvent.objects.create(session=session, sequence_number=1, event_type="tool_result",
                                 content='configmap "checkout-config" not found',
                                 metadata={"server_name": "k8s", "tool_name": "get_events", "evidence_id": "E1"})
    return session


def _configure(scripted_config, turns, **memory):
    scripted_config({"KubernetesAgent": ["Final Answer: x"]},
                    tarsy={"memory": {"enabled": True, "llm_provider": "reflector", **memory}},
                    extra_providers={"reflector": scripted_provider({"memory_reflection": turns})})


def _learn(session, *texts: str) -> list[Memory]:
    """The memories stored or confirmed."""
    outcome = memories.memory_learn(
        session_id=session.id, learned=[memories.Learned(Candidate(kind="fact", text=t)) for t in texts],
        alert_type="kubernetes", chain_id="kubernetes", alert_labels={"service": "checkout"})
    return outcome.stored + outcome.confirmed


def test_memory_text_never_holds_a_planted_secret(scripted_config):
    reply = {"memories": [
        {"kind": "fact", "text": f"The checkout DB password: {PASSWORD} is in the secret; token: {TOKEN}.",
         "labels": {"service": f"token: {TOKEN}"}, "evidence_ids": ["E1"]},
        {"kind": "procedure", "text": f"Log in with password={PASSWORD} and check checkout-config first.",
         "evidence_ids": ["E1"]},
    ]}
    _configure(scripted_config, [{"text": json.dumps(reply)}])
    session = _session()
    session_reflect(session_id=session.id, trigger="completion")

    stored = list(Memory.objects.filter(session=session))
    assert len(stored) == 2
    for memory in stored:
        assert PASSWORD not in memory.text and TOKEN not in memory.text and "__MASKED_" in memory.text
        assert TOKEN not in json.dumps(memory.labels)
    made = memories.memory_create(kind="fact", text=f"api key token: {TOKEN}")
    assert TOKEN not in made.text
    edited = memories.memory_update(memory_id=made.id, text=f"password: {PASSWORD} rotates monthly")
    assert PASSWORD not in edited.text


def test_a_near_duplicate_confirms_the_memory_instead_of_copying_it(scripted_config):
    _configure(scripted_config, [])
    first, second = _session(), _session()
    [memory] = _learn(first, "The checkout service crash-loops when config map checkout-config is missing.")
    _learn(first, "The checkout service crash-loops when config map checkout-config is missing!")  # same session
    assert Memory.objects.get(id=memory.id).confidence == 0.5
    [again] = _learn(second, "Checkout service crash-loops when the config map checkout-config is missing.")
    assert again.id == memory.id and Memory.objects.count() == 1
    memory.refresh_from_db()
    assert memory.confidence == 0.6 and memory.source_sessions == [str(first.id), str(second.id)]
    memories.memory_retire(memory_id=memory.id)
    assert _learn(second, "The checkout service crash-loops when config map checkout-config is missing.") == []
    assert Memory.objects.count() == 1  # a retired memory is not learned back


@pytest.mark.parametrize("turn", [{"text": "Nothing worth remembering here, I think."},
                                  {"text": '{"memories": "none"} and [1, 2'},
                                  {"error": {"message": "quota exhausted"}}])
def test_an_unusable_reflection_learns_nothing_and_says_why(scripted_config, caplog, turn):
    _configure(scripted_config, [turn])
    session = _session()
    with caplog.at_level(logging.WARNING, logger="tarsy.pipeline.memory.reflect"):
        session_reflect(session_id=session.id, trigger="completion")
    assert not Memory.objects.exists()
    assert "reflection on session" in caplog.text
    assert LLMInteraction.objects.filter(session=session, interaction_type="memory_reflection").count() == 1
    session_reflect(session_id=session.id, trigger="completion")  # redelivered: already done, no second call
    assert LLMInteraction.objects.filter(session=session, interaction_type="memory_reflection").count() == 1


def test_reviews_move_confidence_and_inaccurate_retires(scripted_config):
    _configure(scripted_config, [{"text": '{"memories": []}'}])
    source, confirmer = _session(), _session()
    [memory] = _learn(source, "checkout-config must exist for checkout to start.")
    _learn(confirmer, "checkout-config must exist for checkout to start")
    quality.review_save(session_id=source.id, rating="accurate", author="sre")
    assert Memory.objects.get(id=memory.id).confidence == 0.75  # 0.5 + confirmed 0.1 + accurate 0.15
    quality.review_save(session_id=source.id, rating="accurate", feedback="still right", author="sre")
    assert Memory.objects.get(id=memory.id).confidence == 0.75  # the same rating again changes nothing
    quality.review_save(session_id=confirmer.id, rating="inaccurate", author="sre")
    memory.refresh_from_db()
    assert (memory.state, memory.confidence) == ("active", 0.45)  # only confirmed by it: lowered
    quality.review_save(session_id=source.id, rating="inaccurate", author="sre")
    memory.refresh_from_db()
    assert memory.state == "retired" and str(source.id) in memory.retired_reason


def test_recall_filters_by_scope_ranks_and_caps(scripted_config):
    _configure(scripted_config, [], max_injected=2, half_life_days=10)
    session = _session()
    fresh = memories.memory_create(kind="incident", text="checkout crash loop: config map checkout-config missing",
                                   alert_type="kubernetes", labels={"service": "checkout"}, confidence=0.8)
    stale = memories.memory_create(kind="incident", text="checkout crash loop: config map checkout-config missing "
                                   "after a deploy", alert_type="kubernetes", confidence=0.8)
    Memory.objects.filter(id=stale.id).update(confirmed_at=timezone.now() - timedelta(days=60))
    weak = memories.memory_create(kind="procedure", text="for checkout crash loop check config map checkout-config",
                                  alert_type="", confidence=0.1)
    memories.memory_create(kind="fact", text="payments crash loop: config map checkout-config missing",
                           labels={"service": "payments"}, confidence=1.0)
    memories.memory_create(kind="fact", text="checkout crash loop config map checkout-config", alert_type="node")
    retired = memories.memory_create(kind="fact", text="checkout crash loop config map checkout-config missing")
    memories.memory_retire(memory_id=retired.id)
    memories.memory_create(kind="fact", text="disk pressure on node-3 evicts pods", confidence=1.0)

    hits, mode = recall(query="kubernetes checkout pods crash loop, config map checkout-config not found",
                        alert_type="kubernetes", chain_id=session.chain_id, labels={"service": "checkout"})
    assert mode == "keyword"
    # Capped at 2; payments (another service), node (another alert type), retired and disk (no match) are out;
    # the stale memory, six half-lives old, weighs less than a fresh one of confidence 0.1.
    assert [h.memory.id for h in hits] == [fresh.id, weak.id]
    assert hits[0].ranked.score > hits[1].ranked.score
    memories.memory_retire(memory_id=fresh.id)
    memories.memory_update(memory_id=weak.id, state="retired")
    hits, _ = recall(query="checkout crash loop config map checkout-config", alert_type="kubernetes",
                     chain_id="kubernetes", labels={"service": "checkout"})
    assert [h.memory.id for h in hits] == [stale.id]  # old is weaker, not forgotten


def test_the_analysis_may_cite_only_the_memories_its_session_recalled(scripted_config):
    from tarsy.services.citations import citations_verify

    _configure(scripted_config, [])
    session = _session()
    memory = memories.memory_create(kind="fact", text="checkout-config lives in git")
    TimelineEvent.objects.create(session=session, sequence_number=2, event_type="memory.recalled",
                                 metadata={"memory_ids": [memory.id], "scores": [1.0], "mode": "keyword"})
    AlertSession.objects.filter(id=session.id).update(
        final_analysis=f"The config map is missing, restore it from git [M{memory.id}]; also [M{memory.id + 100}].")
    result = citations_verify(session_id=session.id)
    assert [e["id"] for e in result["valid"]] == [f"M{memory.id}"]
    assert [(e["id"], e["reason"]) for e in result["invalid"]] == [(f"M{memory.id + 100}", "not_recalled")]


def _first_prompt_memories(session: AlertSession, stage_index: int, stage_type: str = "investigation") -> str:
    """What a new execution's first prompt recalls, in a stage of the session (an action stage recalls too)."""
    stage = Stage.objects.create(session=session, name=f"stage-{stage_index}", index=stage_index, type=stage_type)
    execution = AgentExecution.objects.create(stage=stage, session=session, agent_name="KubernetesAgent",
                                              iteration_strategy="react")
    recorder = DbRecorder(session_id=session.id, stage_id=stage.id, execution_id=execution.id, iteration=1)
    section = recalled_for_prompt(execution, recorder)
    recorder.flush()
    return section


def test_a_memory_recalled_by_several_stages_of_one_session_counts_one_use(scripted_config):
    _configure(scripted_config, [])
    memory = memories.memory_create(kind="fact", text="checkout crash loop: config map checkout-config missing",
                                    alert_type="kubernetes", labels={"service": "checkout"})
    first = _session('{"labels": {"service": "checkout"}, "message": "checkout crash loop, config map missing"}')
    assert f"[M{memory.id}]" in _first_prompt_memories(first, 0)
    assert f"[M{memory.id}]" in _first_prompt_memories(first, 1, stage_type="action")
    memory.refresh_from_db()
    assert memory.use_count == 1 and memory.last_used_at is not None
    assert TimelineEvent.objects.filter(session=first, event_type="memory.recalled").count() == 2

    second = _session('{"labels": {"service": "checkout"}, "message": "checkout crash loop again"}')
    assert f"[M{memory.id}]" in _first_prompt_memories(second, 0)
    memory.refresh_from_db()
    assert memory.use_count == 2


def _alertmanager_session(namespace: str, service: str) -> AlertSession:
    """A session started by an Alertmanager webhook whose one firing alert carries these labels."""
    body = json.loads((WEBHOOKS / "alertmanager_v4.json").read_text())
    alert = copy.deepcopy(body["alerts"][0])
    alert["labels"].update(namespace=namespace, service=service)
    alert["fingerprint"] = f"{namespace}-{service}"
    body.update(alerts=[alert], groupLabels={}, commonLabels={})
    response = APIClient(REMOTE_ADDR="127.0.0.1").post("/api/v1/alerts/alertmanager", data=json.dumps(body),
                                                       content_type="application/json")
    assert response.status_code == 202, response.content
    return AlertSession.objects.get(id=response.json()["sessions"][0]["session_id"])


def test_a_memory_learned_from_a_webhook_alert_is_scoped_by_its_labels(scripted_config):
    lesson = "checkout crash loops because config map checkout-config is missing; restore it from git"
    _configure(scripted_config, [{"text": json.dumps({"memories": [
        {"kind": "incident", "text": lesson, "evidence_ids": ["E1"]}]})}])
    source = _alertmanager_session("shop", "checkout")
    AlertSession.objects.filter(id=source.id).update(status="completed", completed_at=timezone.now(),
                                                     final_analysis="checkout lacks its config map.")
    TimelineEvent.objects.create(session=source, sequence_number=90, event_type="tool_result",
                                 content='configmap "checkout-config" not found',
                                 metadata={"server_name": "k8s", "tool_name": "get_events", "evidence_id": "E1"})
    session_reflect(session_id=source.id, trigger="completion")

    [memory] = Memory.objects.all()
    assert (memory.state, memory.labels) == ("active", {"namespace": "shop", "service": "checkout"})
    assert f"[M{memory.id}]" in _first_prompt_memories(_alertmanager_session("shop", "checkout"), 0)
    assert _first_prompt_memories(_alertmanager_session("payments", "checkout"), 0) == ""
