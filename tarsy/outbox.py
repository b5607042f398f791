"""The transactional outbox: decided tasks are written with the decision and relayed to the broker.

`enqueue_on_commit` runs inside the deciding transaction (tarsy.tasks.enact is the enactor): it writes a row per
task there (the next iteration excepted: see SENT_FIRST), and after the commit sends the tasks in order and
deletes the rows of those sent — a rollback leaves neither row nor task. A row left behind means the send failed
(the broker was down) or the process died between commit and send. Every web process and every worker runs one
relay, a daemon thread: rows older than RELAY_AGE_S
(younger ones are still on their way through the commit path) are sent in order every RELAY_INTERVAL_S, backing
off to RELAY_MAX_BACKOFF_S while the broker is away, so the outbox drains within seconds of its return. Relays
claim rows under SKIP LOCKED and never send one twice; a task sent twice anyway (a sender died after its send,
before the delete) is a no-op by its state guard. The sweeper's orphan detection stays the last resort, for work
lost inside the broker.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.db import close_old_connections, connections, transaction
from django.utils import timezone

from tarsy.decisions import (
    Enqueued,
    FinishSession,
    ReapSession,
    ReflectSession,
    RunIteration,
    ScoreSession,
    SlackDeliver,
)
from tarsy.services import outbox

log = logging.getLogger(__name__)

Send = Callable[[Enqueued], None]  # queues one decision's task (tarsy.tasks.send)

# Kept in the outbox until the broker takes them. Not a dispatch: the pending session row is its record, and every
# sweep dispatches what is pending (an alert burst would otherwise write and delete a row per alert).
OUTBOXED: tuple[type, ...] = (FinishSession, ReapSession, ScoreSession, SlackDeliver, ReflectSession)
# Sent first, written to the outbox only when the send fails: the next iteration, decided by every iteration that
# continues, where a row written and deleted each time would cost the hot path a statement. Its record is the
# execution row itself (an iteration completed, no lease held): were the process to die between the commit and
# the send, the executions that should have a task queued and have none are re-driven from that row
# (tarsy.pipeline.sweeper), as they are when the broker loses a task it had taken.
SENT_FIRST: tuple[type, ...] = (RunIteration,)
_KINDS = {cls.__name__: cls for cls in (*OUTBOXED, *SENT_FIRST)}

RELAY_AGE_S = 5.0  # the commit path sends within milliseconds and its relay deletes within a pass: older is left behind
RELAY_INTERVAL_S = 1.0  # a left-behind row goes out within a second or two once the broker takes tasks again
RELAY_MAX_BACKOFF_S = 5.0  # while the broker is away: an attempt per process every few seconds at most
RELAY_BATCH = 100


def decision_encode(decision: Enqueued) -> tuple[str, dict[str, Any]]:
    """An outbox row's kind and fields."""
    return type(decision).__name__, asdict(decision)


def decision_decode(kind: str, fields: dict[str, Any]) -> Enqueued:
    if kind not in _KINDS:
        raise ValueError(f"unknown outbox task kind {kind!r}")
    return _KINDS[kind](**fields)


def enqueue_on_commit(work: list[Enqueued], send: Send) -> None:
    """Write the work's rows in the current transaction (one INSERT); once it commits, send it in order and
    delete the rows of what was sent (one DELETE). Outside a transaction both happen at once."""
    ids = iter(outbox.outbox_add(entries=[decision_encode(d) for d in work if isinstance(d, OUTBOXED)]))
    rows = [(d, next(ids) if isinstance(d, OUTBOXED) else None) for d in work]
    transaction.on_commit(lambda: _send_committed(rows, send))


def _send_committed(rows: list[tuple[Enqueued, int | None]], send: Send) -> None:
    sent = []
    for position, (decision, row_id) in enumerate(rows):
        try:
            send(decision)
        except Exception as exc:  # any failure to send: nothing is lost, the relay retries the rows
            log.warning("could not queue %d task(s), left to the outbox relay: %s: %s", len(rows) - position,
                        type(exc).__name__, exc)
            _outbox_unsent([d for d, row_id in rows[position:] if row_id is None and isinstance(d, SENT_FIRST)])
            break
        if row_id is not None:
            sent.append(row_id)
    relay = _running_relay()
    if relay is not None:
        relay.remove_later(sent)
    else:  # a process without a relay (a management command, a test): at once, in a transaction of its own
        outbox.outbox_remove(ids=sent)


def _outbox_unsent(decisions: list[Enqueued]) -> None:
    """Tasks sent first that the broker did not take: written now (a transaction of their own) for the relay."""
    try:
        outbox.outbox_add(entries=[decision_encode(d) for d in decisions])
    except Exception:  # the database is away too: the sweeper re-drives the executions from their rows
        log.exception("could not keep %d unsent task(s) in the outbox", len(decisions))


def relay_pending(send: Send, *, age: float = RELAY_AGE_S, limit: int = RELAY_BATCH) -> int:
    """Send the oldest rows left behind, in order, and delete those sent; returns how many were sent. A failed
    send ends the pass: the rows sent before it are deleted, then its error is raised."""
    before = timezone.now() - timedelta(seconds=age)
    if not outbox.outbox_waiting(before=before):  # the usual case: one small read, no transaction
        return 0
    done: list[int] = []
    error: Exception | None = None
    with transaction.atomic():
        for row in outbox.outbox_claim(before=before, limit=limit):
            try:
                decision = decision_decode(row.kind, row.fields)
            except (TypeError, ValueError):
                log.error("outbox row %s (%s) is no task this version knows: dropped", row.id, row)
                done.append(row.id)
                continue
            try:
                send(decision)
            except Exception as exc:  # the broker is still away: the rest stay for the next pass
                error = exc
                break
            done.append(row.id)
        outbox.outbox_remove(ids=done)
    if error is not None:
        raise error
    return len(done)


class OutboxRelay:
    """Runs `relay_pending` in a daemon thread, with backoff while sending fails: one log line when sending
    starts failing and one when left-behind tasks go out, never a traceback per attempt.

    It also deletes, once per pass and in one statement, the rows of the tasks this process has sent on the
    commit path (`remove_later`): a DELETE transaction per sent task would cost each iteration a commit (a WAL
    flush). The pass comes every RELAY_INTERVAL_S, well inside RELAY_AGE_S, so other relays do not take those
    rows for left behind; if this process dies first, they are sent again, which a task's state guard makes a
    no-op."""

    def __init__(self, send: Send, *, interval: float = RELAY_INTERVAL_S, max_backoff: float = RELAY_MAX_BACKOFF_S):
        self.send = send
        self.interval = interval
        self.max_backoff = max_backoff
        self._stop = threading.Event()
        self._sent: list[int] = []
        self._sent_lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="tarsy-outbox-relay", daemon=True)

    def running(self) -> bool:
        return self.thread.is_alive() and not self._stop.is_set()

    def remove_later(self, ids: list[int]) -> None:
        """Rows of tasks the broker has taken: deleted on the next pass."""
        if ids:
            with self._sent_lock:
                self._sent.extend(ids)

    def _remove_sent(self) -> None:
        with self._sent_lock:
            ids, self._sent = self._sent, []
        try:
            outbox.outbox_remove(ids=ids)
        except Exception:
            with self._sent_lock:  # the database is away: next pass
                self._sent[:0] = ids
            raise

    def start(self) -> OutboxRelay:
        """Start the thread; this process's commit path then leaves its sent rows to this relay."""
        global _relay
        self.thread.start()
        _relay = self
        return self

    def stop(self) -> None:
        global _relay
        if _relay is self:
            _relay = None
        self._stop.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        delay = self.interval
        failing = False
        try:
            while not self._stop.wait(delay):
                try:
                    self._remove_sent()
                    sent = relay_pending(self.send)
                except Exception as exc:  # broker or database away: try again later, quietly
                    if not failing:
                        log.warning("outbox relay cannot send yet (%s: %s); retrying every %.0f s at most",
                                    type(exc).__name__, exc, self.max_backoff)
                    failing = True
                    delay = min(max(delay, self.interval) * 2, self.max_backoff)
                    continue
                finally:
                    close_old_connections()  # a web process gives its pooled connection back
                if sent:
                    log.warning("outbox relay sent %d task(s) left behind", sent)
                failing = False
                delay = 0 if sent == RELAY_BATCH else self.interval  # a backlog drains at once
        finally:
            with contextlib.suppress(Exception):  # stopping: what is left is sent again, as a no-op
                self._remove_sent()
            connections.close_all()


_relay: OutboxRelay | None = None  # this process's running relay
_relay_lock = threading.Lock()


def start_relay(send: Send) -> OutboxRelay:
    """This process's relay, started once (tarsy.celery.start_outbox_relay)."""
    with _relay_lock:
        return _running_relay() or OutboxRelay(send).start()


def _running_relay() -> OutboxRelay | None:
    relay = _relay
    return relay if relay is not None and relay.running() else None


def relay_running() -> bool:
    """Whether this process runs a relay (then its commit path leaves the deletes of sent rows to it)."""
    return _running_relay() is not None


def stop_relay() -> None:
    """Stop this process's relay, deleting the rows of what it sent first (a process about to exit)."""
    with _relay_lock:
        if _relay is not None:
            _relay.stop()

