"""Assertions and probes over sessions that tests share: waiting for them, checking rows, sampling the cap."""

from __future__ import annotations

import threading
import time

from django.db import connection
from django.db.models import Count

from tarsy.models import AgentExecution, AlertSession, LLMInteraction, Message, TimelineEvent

from .processes import wait_for


def wait_terminal(session_ids, timeout: float, proc=None) -> list[AlertSession]:
    """Every session terminal within `timeout`, else fail with their states and the process's log tail."""
    ids = [str(s) for s in session_ids]

    def done():
        rows = list(AlertSession.all_objects.filter(id__in=ids))
        return rows if len(rows) == len(ids) and all(r.is_terminal for r in rows) else None

    try:
        return wait_for(done, timeout=timeout, interval=0.2, message="sessions to finish")
    except AssertionError:
        states = list(AlertSession.all_objects.filter(id__in=ids).values_list("status", flat=True))
        raise AssertionError(f"not terminal: {states}\n{proc.log()[-4000:] if proc else ''}") from None


def assert_no_duplicates(session_id) -> None:
    """Gap-free message sequences, unique timeline sequences, one recorded LLM call per iteration (besides the
    calls of superseded attempts, which stay on the record)."""
    for execution in AgentExecution.objects.filter(session_id=session_id):
        seqs = list(Message.objects.filter(execution=execution).values_list("sequence_number", flat=True))
        assert seqs == list(range(1, len(seqs) + 1)), f"{execution.agent_name}: message sequence {seqs}"
        events = list(TimelineEvent.objects.filter(execution=execution).values_list("sequence_number", flat=True))
        assert len(events) == len(set(events)), f"{execution.agent_name}: duplicate timeline sequence numbers"
        per_iteration = (LLMInteraction.objects.filter(execution=execution, interaction_type="iteration",
                                                       superseded=False)
                         .values("iteration").annotate(n=Count("id")).filter(n__gt=1))
        assert not per_iteration.exists(), f"{execution.agent_name}: an iteration was recorded twice"


class PeakActiveSessions:
    """Samples how many sessions are running at once, every 50 ms, while the `with` block runs."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                running = AlertSession.objects.filter(status__in=["in_progress", "cancelling"]).count()
                self.peak = max(self.peak, running)
                time.sleep(0.05)
        finally:
            connection.close()

    def __enter__(self) -> PeakActiveSessions:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
