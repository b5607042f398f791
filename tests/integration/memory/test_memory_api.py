"""`/api/v1/memories` and the admin: find, read, correct and retire what TARSy remembers."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from tarsy.models import AlertSession, Memory
from tarsy.services import memories

pytestmark = [pytest.mark.django_db]

TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def api() -> APIClient:
    return APIClient(REMOTE_ADDR="127.0.0.1")


@pytest.fixture
def rows():
    session = AlertSession.objects.create(alert_data="x", alert_type="kubernetes", chain_id="kubernetes",
                                          status="completed", completed_at=timezone.now())
    incident = memories.memory_create(kind="incident", text="checkout crash loop: config map checkout-config missing",
                                      alert_type="kubernetes", labels={"service": "checkout"})
    Memory.objects.filter(id=incident.id).update(session=session, embedding=[0.1, 0.2], embedding_model="e")
    fact = memories.memory_create(kind="fact", text="metric node_disk_bytes does not exist in cluster eu",
                                  alert_type="node")
    return session, incident, fact


def test_the_list_searches_filters_and_pages(api, rows):
    session, incident, fact = rows
    body = api.get("/api/v1/memories").json()
    assert body["count"] == 2 and {r["id"] for r in body["results"]} == {incident.id, fact.id}
    assert [r["id"] for r in api.get("/api/v1/memories", {"search": "Config checkout"}).json()["results"]] \
        == [incident.id]
    assert [r["id"] for r in api.get("/api/v1/memories", {"kind": "fact"}).json()["results"]] == [fact.id]
    assert [r["id"] for r in api.get("/api/v1/memories", {"session": str(session.id)}).json()["results"]] \
        == [incident.id]
    assert api.get("/api/v1/memories", {"state": "retired"}).json()["count"] == 0
    bad = api.get("/api/v1/memories", {"kind": "rumour"})
    assert bad.status_code == 400 and bad.json()["error"] == "validation_error" and "kind" in bad.json()["detail"]


def test_detail_shows_provenance_and_unknown_ids_are_a_json_404(api, rows):
    session, incident, _ = rows
    body = api.get(f"/api/v1/memories/{incident.id}").json()
    assert body["session_id"] == str(session.id) and body["labels"] == {"service": "checkout"}
    assert body["use_count"] == 0 and body["state"] == "active"
    missing = api.get("/api/v1/memories/999999")
    assert missing.status_code == 404 and missing.json()["error"] == "memory 999999 not found"


def test_a_correction_is_masked_and_drops_the_stale_embedding(api, rows):
    _, incident, _ = rows
    response = api.patch(f"/api/v1/memories/{incident.id}",
                         {"text": f"checkout needs checkout-config; token: {TOKEN}", "confidence": 0.9,
                          "labels": {"service": "checkout", "namespace": "shop"}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert TOKEN not in body["text"] and "__MASKED_" in body["text"]
    assert body["confidence"] == 0.9 and body["labels"] == {"service": "checkout", "namespace": "shop"}
    stored = Memory.objects.get(id=incident.id)
    assert stored.embedding is None and stored.embedding_model == ""
    for patch, field in [({"confidence": 2}, "confidence"), ({"labels": {"pod": "x"}}, "labels"),
                         ({"text": ""}, "text"), ({"kind": "rumour"}, "kind")]:
        bad = api.patch(f"/api/v1/memories/{incident.id}", patch, format="json")
        assert bad.status_code == 400 and field in bad.json()["detail"], (patch, bad.content)


def test_retiring_keeps_the_memory_with_its_reason(api, rows):
    _, incident, _ = rows
    response = api.post(f"/api/v1/memories/{incident.id}/retire", {"reason": "the config map is gone for good"},
                        format="json")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "retired" and response.json()["retired_reason"] == \
        "the config map is gone for good"
    assert api.get("/api/v1/memories", {"state": "active"}).json()["count"] == 1
    assert api.post("/api/v1/memories/999999/retire", {}, format="json").status_code == 404


def test_the_admin_lists_memories_and_retires_them(client, rows):
    _, incident, fact = rows
    client.force_login(get_user_model().objects.create_superuser("oncall", "", "pw"))
    page = client.get("/admin/tarsy/memory/", {"q": "checkout"})
    assert page.status_code == 200 and b"checkout crash loop" in page.content and b"node_disk_bytes" not in page.content
    response = client.post("/admin/tarsy/memory/", {"action": "retire", "_selected_action": [fact.id]})
    assert response.status_code == 302
    assert Memory.objects.get(id=fact.id).state == "retired" and Memory.objects.get(id=incident.id).state == "active"
