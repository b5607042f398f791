"""Every change to a memory is recorded (who, when, why, before and after) and shown; an edit never brings a
retired memory back; scope labels are masked like the text (#43)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from agents.memory.reflection import Candidate
from tarsy.models import AlertSession, Memory, MemoryChange
from tarsy.pipeline.memory.recall import recall
from tarsy.services import memories, quality

pytestmark = [pytest.mark.django_db]

TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def api() -> APIClient:
    client = APIClient(REMOTE_ADDR="127.0.0.1")
    client.force_authenticate(user=get_user_model().objects.create_user("alice", "alice@example.com", "pw"))
    return client


def _session(alert_type: str = "kubernetes") -> AlertSession:
    return AlertSession.objects.create(alert_data="{}", alert_type=alert_type, chain_id="kubernetes",
                                       status="completed", final_analysis="x", completed_at=timezone.now())


def _retired() -> Memory:
    memory = memories.memory_create(kind="fact", text="checkout-config lives in git", alert_type="kubernetes")
    return memories.memory_retire(memory_id=memory.id, reason="the config map moved to vault")


def test_an_edit_never_reactivates_a_retired_memory(api):
    memory = _retired()
    response = api.patch(f"/api/v1/memories/{memory.id}", {"state": "active", "text": "checkout-config is in vault"},
                         format="json")
    assert response.status_code == 400 and "state" in response.json()["detail"], response.content
    stored = Memory.objects.get(id=memory.id)
    assert stored.state == "retired" and stored.text == "checkout-config lives in git"
    assert api.patch(f"/api/v1/memories/{memory.id}", {"text": "checkout-config is in vault"},
                     format="json").json()["state"] == "retired"  # an edit of its text leaves it retired
    assert Memory.objects.get(id=memory.id).state == "retired"
    assert not MemoryChange.objects.filter(memory_id=memory.id, action="reactivated").exists()


def test_reactivation_is_an_explicit_step_with_a_reason_on_the_record(api):
    memory = _retired()
    assert api.post(f"/api/v1/memories/{memory.id}/reactivate", {}, format="json").status_code == 400
    assert api.post(f"/api/v1/memories/{memory.id}/reactivate", {"reason": " "}, format="json").status_code == 400
    assert Memory.objects.get(id=memory.id).state == "retired"
    response = api.post(f"/api/v1/memories/{memory.id}/reactivate", {"reason": "vault was rolled back"},
                        format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["state"] == "active" and body["retired_reason"] == ""
    [change, *_] = body["changes"]
    assert change["action"] == "reactivated" and change["actor"] == "alice"
    assert change["reason"] == "vault was rolled back" and change["at"]
    assert change["before"] == {"state": "retired", "retired_reason": "the config map moved to vault"}
    assert change["after"] == {"state": "active", "retired_reason": ""}
    again = api.post(f"/api/v1/memories/{memory.id}/reactivate", {"reason": "twice"}, format="json")
    assert again.status_code == 400


def test_every_edit_and_state_change_is_recorded_with_who_when_and_before_after(api):
    memory = memories.memory_create(kind="fact", text="checkout-config lives in git", alert_type="kubernetes")
    api.patch(f"/api/v1/memories/{memory.id}", {"text": "checkout-config lives in vault", "confidence": 0.8},
              format="json")
    api.patch(f"/api/v1/memories/{memory.id}", {"text": "checkout-config lives in vault"}, format="json")  # no-op
    api.post(f"/api/v1/memories/{memory.id}/retire", {"reason": "vault is gone"}, format="json")
    changes = api.get(f"/api/v1/memories/{memory.id}").json()["changes"]
    assert [c["action"] for c in changes] == ["retired", "edited", "created"]
    retired, edited, created = changes
    assert edited["actor"] == "alice" and retired["actor"] == "alice" and created["actor"] == "tarsy"
    assert edited["before"] == {"text": "checkout-config lives in git", "confidence": 0.5}
    assert edited["after"] == {"text": "checkout-config lives in vault", "confidence": 0.8}
    assert retired["after"] == {"state": "retired", "retired_reason": "vault is gone"}
    assert created["after"]["text"] == "checkout-config lives in git"


def test_learning_confirming_and_reviews_are_recorded_under_their_actor(scripted_config):
    scripted_config({"KubernetesAgent": ["Final Answer: x"]}, tarsy={"memory": {"enabled": True}})
    first, second = _session(), _session()
    text = "The checkout service crash-loops when config map checkout-config is missing."
    [memory] = memories.memory_learn(session_id=first.id, learned=[memories.Learned(Candidate("fact", text))],
                                     alert_type="kubernetes", chain_id="kubernetes", alert_labels={}).stored
    memories.memory_learn(session_id=second.id, learned=[memories.Learned(Candidate("fact", text))],
                          alert_type="kubernetes", chain_id="kubernetes", alert_labels={})
    quality.review_save(session_id=first.id, rating="inaccurate", author="bob")
    actions = list(MemoryChange.objects.filter(memory=memory).order_by("at", "id").values_list("action", "actor"))
    assert actions == [("learned", "reflection"), ("confirmed", "reflection"), ("retired", "bob")]
    retired = MemoryChange.objects.filter(memory=memory, action="retired").get()
    assert retired.before["state"] == "active" and "reviewed inaccurate" in retired.reason


def test_the_memory_page_shows_each_memory_s_history():
    memory = _retired()
    html = Client(REMOTE_ADDR="127.0.0.1").get("/memories").content.decode()
    assert "History (2 changes)" in html and 'data-action="retired"' in html and 'data-action="created"' in html
    assert "the config map moved to vault" in html
    assert f'class="memory-reactivate" data-memory-id="{memory.id}"' in html


def test_scope_labels_never_hold_an_unmasked_secret(api, scripted_config):
    scripted_config({"KubernetesAgent": ["Final Answer: x"]}, tarsy={"memory": {"enabled": True}})
    session = _session()
    [learned] = memories.memory_learn(
        session_id=session.id, learned=[memories.Learned(Candidate("fact", "checkout pods restart on deploy"))],
        alert_type="kubernetes", chain_id="kubernetes", alert_labels={"service": "checkout", "namespace": TOKEN}).stored
    made = memories.memory_create(kind="fact", text="checkout pods are slow", labels={"namespace": TOKEN})
    response = api.patch(f"/api/v1/memories/{made.id}", {"labels": {"cluster": f"token={TOKEN}"}}, format="json")
    assert response.status_code == 200, response.content
    for memory in Memory.objects.all():
        assert TOKEN not in json.dumps(memory.labels), memory.labels
    assert TOKEN not in json.dumps(list(MemoryChange.objects.values("before", "after")))
    assert Memory.objects.get(id=learned.id).labels == {"service": "checkout", "namespace": "__MASKED_GITHUB_TOKEN__"}
    # the alert's labels are masked the same way before they are compared: the memory is still in scope
    hits, _ = recall(query="kubernetes checkout pods restart on deploy", alert_type="kubernetes",
                     chain_id="kubernetes", labels={"service": "checkout", "namespace": TOKEN})
    assert learned.id in [h.memory.id for h in hits]
    hits, _ = recall(query="kubernetes checkout pods restart on deploy", alert_type="kubernetes",
                     chain_id="kubernetes", labels={"service": "checkout", "namespace": "shop"})
    assert learned.id not in [h.memory.id for h in hits]
