"""Related alerts reach a running investigation: in its first prompt when they came first, as a message of their
own at the next step when they arrive later; steps of a session without any look for none."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tarsy.models import OccurrenceKind
from tarsy.services import occurrences

from .conftest import interactions, messages, only_execution, react_action, run_next, start_session, timeline

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

SCRIPT = [react_action("Check the pods.", "k8s.get_pods", '{"namespace": "prod"}'),
          react_action("And again.", "k8s.get_pods", '{"namespace": "prod"}'),
          "Thought: Clear now.\nFinal Answer: web-1 crashes."]


def _related(session, data: str) -> None:
    """Attached as intake attaches an alert of the session's group (the session's `related_count` raised with it)."""
    occurrences.occurrence_attach(session=session, kind=OccurrenceKind.RELATED, alert_type="ctrl-alert",
                                  fingerprint=data, severity="", alert_data=data, author="")


def test_related_alerts_join_the_first_prompt_and_later_steps(configure):
    configure({"SreAgent": SCRIPT})
    session = start_session()
    _related(session, "db-1 in namespace prod is unreachable")
    execution = only_execution(session)

    run_next(execution.id)
    (first,) = [e for e in timeline(execution.id) if e.event_type == "related_alerts"]
    assert first.metadata["count"] == 1
    assert "db-1 in namespace prod is unreachable" in interactions(execution.id)[0].conversation[1]["content"]

    _related(session, "cache-2 in namespace prod is evicting keys")
    run_next(execution.id)
    related = [e for e in timeline(execution.id) if e.event_type == "related_alerts"]
    assert [e.metadata["count"] for e in related] == [1, 1]
    assert any("cache-2 in namespace prod" in m.content and "db-1" not in m.content
               for m in messages(execution.id) if m.role == "user")


def test_a_step_of_a_session_without_related_alerts_does_not_look_for_them(configure):
    configure({"SreAgent": SCRIPT})
    session = start_session()
    execution = only_execution(session)

    with CaptureQueriesContext(connection) as queries:
        run_next(execution.id)
    assert not [q for q in queries if "tarsy_alertoccurrence" in q["sql"] and "tarsy_agentexecution" not in q["sql"]]
    assert not [e for e in timeline(execution.id) if e.event_type == "related_alerts"]
