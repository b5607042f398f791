"""The Memory page (Django test client): search and filters, provenance and use shown, text escaped."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from tarsy.models import AlertSession, Memory
from tarsy.services import memories

pytestmark = [pytest.mark.django_db]

EVIL = "<script>window.__xss=1</script>"


def test_the_memory_page_searches_filters_and_shows_provenance():
    session = AlertSession.objects.create(alert_data="x", alert_type="kubernetes", chain_id="kubernetes",
                                          status="completed", completed_at=timezone.now())
    incident = memories.memory_create(kind="incident", text=f"checkout crash loop: restore checkout-config {EVIL}",
                                      alert_type="kubernetes", labels={"service": "checkout"})
    Memory.objects.filter(id=incident.id).update(session=session, evidence_ids=["E1"], use_count=3)
    fact = memories.memory_create(kind="fact", text="node-3 disk fills with logs", alert_type="node")
    memories.memory_retire(memory_id=fact.id, reason="disk replaced")
    client = Client(REMOTE_ADDR="127.0.0.1")

    html = client.get("/memories").content.decode()
    assert f'id="memory-{incident.id}"' in html and f'id="memory-{fact.id}"' in html
    assert EVIL not in html and "&lt;script&gt;" in html
    assert f'href="/sessions/{session.id}"' in html and "evidence E1" in html and "recalled 3 times" in html
    assert "service=checkout" in html and "retired: disk replaced" in html
    assert html.count('class="memory-retire"') == 1  # only the active one offers it
    assert f'class="memory-retire" data-memory-id="{incident.id}"' in html

    searched = client.get("/memories", {"search": "checkout", "kind": "incident"}).content.decode()
    assert f'id="memory-{incident.id}"' in searched and f'id="memory-{fact.id}"' not in searched
    retired = client.get("/memories", {"state": "retired"}).content.decode()
    assert f'id="memory-{fact.id}"' in retired and f'id="memory-{incident.id}"' not in retired
    ignored = client.get("/memories", {"kind": "rumour"}).content.decode()
    assert "The kind filter was ignored" in ignored and f'id="memory-{fact.id}"' in ignored
    assert 'href="/memories"' in client.get("/").content.decode()  # in the main navigation


def test_the_session_timeline_shows_what_was_recalled():
    from tarsy.models import TimelineEvent

    session = AlertSession.objects.create(alert_data="x", alert_type="kubernetes", chain_id="kubernetes",
                                          status="completed", completed_at=timezone.now())
    TimelineEvent.objects.create(session=session, sequence_number=1, event_type="memory.recalled",
                                 content=f"Recalled 1 memories (keyword):\n[M7] score 1.2: restore {EVIL}",
                                 metadata={"memory_ids": [7], "scores": [1.2], "mode": "keyword"})
    html = Client(REMOTE_ADDR="127.0.0.1").get(f"/sessions/{session.id}").content.decode()
    assert "Memories recalled" in html and "[M7] score 1.2" in html
    assert EVIL not in html
