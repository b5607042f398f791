"""Pooled database connections given back while a thread waits.

Web processes and threads-pool workers borrow connections from Django's per-process pool (settings.DATABASES);
`close()` returns a borrowed connection to the pool and the next query borrows one again. A worker thread waits
seconds on an LLM or a tool between short bursts of queries, so it gives its connection back before each wait and
after each task: connections then follow the queries in flight, not the iterations.

The rule, in the few places that apply it: a thread holds a connection only while it runs statements. Every LLM
call gives it back before waiting for the provider and before each next chunk (`agents.llm.recorded`'s
`before_wait` hook, installed by the tarsy app), so the stop checks and progress saves made between chunks
borrow one for a statement (heartbeats are the process's heartbeat thread's, which gives its own back after each
round: services.recorder.liveness); the recorder gives it back before a tool call, and Celery's task_postrun
after every task (tarsy.celery).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, connections

T = TypeVar("T")
LOST_CONNECTION = (OperationalError, InterfaceError)


def pooled() -> bool:
    return "pool" in settings.DATABASES["default"].get("OPTIONS", {})


def connection_give_back() -> None:
    """Before a wait: return this thread's connection to the pool (nothing without a pool or inside a
    transaction). Cheap when the thread holds none: `in_atomic_block` is the wrapper's own state, where
    `transaction.get_autocommit()` would first borrow a connection to ask (waiting for one when all are lent)."""
    if pooled() and not connection.in_atomic_block:
        connection.close()


def connections_give_back() -> None:
    """After a task: every connection this thread holds goes back to the pool (nothing without a pool)."""
    if pooled():
        connections.close_all()


def reconnecting(work: Callable[[], T]) -> T:
    """Run `work` (statements in their own transaction, or none); when the connection turns out lost (the server
    restarted, an operator ended the backend), reconnect and run it once more. A dropped connection then costs
    one statement's retry, not the step around it; a second failure is the caller's. Inside a caller's
    transaction it runs once: the transaction is lost with the connection, and only its owner can redo it."""
    if connection.in_atomic_block:
        return work()
    try:
        return work()
    except LOST_CONNECTION:
        connection.close()  # public API: the next query opens (or borrows) a fresh connection
        return work()
