"""Celery application: settings from Django (`CELERY_` prefix), periodic jobs for beat, and the enactor that
turns the pipeline's decisions into tasks (installed in every process from the tarsy app's `ready()`)."""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from celery import Celery, Task, bootsteps
from celery.signals import (
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
)

# `celery -A tarsy worker` and `beat` load this module first (the `tarsy` package imports nothing); a web or test
# process has named its settings before Django imports it (tarsy.apps).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings.worker")



class DjangoCelerySettings(Mapping):
    """Django's `CELERY_` settings, read once, on Celery's first look-up (after Django is set up).

    Celery looks several settings up at every publish, each under several names, and every name it misses on
    Django's lazy settings raises inside `getattr`: a tenth of a publish's CPU, paid for every iteration's next
    task. Settings are fixed once the process has started."""

    def __init__(self) -> None:
        self._values: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._values is None:
            from django.conf import settings

            self._values = {name: getattr(settings, name) for name in dir(settings) if name.startswith("CELERY_")}
        return self._values

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


class TarsyTask(Task):
    """Every TARSy task takes ids and numbers: their plain repr stands for Celery's `saferepr` of the arguments
    (a size-limited walk of them, about 5 % of every publish), shown in logs and task inspection."""

    def apply_async(self, args=None, kwargs=None, **options):
        options.setdefault("argsrepr", repr(tuple(args or ())))
        options.setdefault("kwargsrepr", repr(kwargs or {}))
        return super().apply_async(args, kwargs, **options)


app = Celery("tarsy", task_cls=TarsyTask)
app.config_from_object(DjangoCelerySettings(), namespace="CELERY")
app.autodiscover_tasks(["tarsy"], related_name="tasks", force=True)



class BrokerRestartWatch(bootsteps.StartStopStep):
    """At each connection of a worker to the broker (its first, and every one after a loss): a broker that
    restarted since TARSy last saw it lost the tasks queued in it, and they are re-driven now
    (tarsy.pipeline.redrive). In a thread of its own, so the worker consumes meanwhile."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, c) -> None:
        from django.conf import settings

        url = settings.CELERY_BROKER_URL
        if url.startswith(("redis://", "rediss://", "unix://")):
            threading.Thread(target=_check_broker, args=(url,), name="tarsy-broker-watch", daemon=True).start()


def _check_broker(url: str) -> None:
    from django.db import connections

    from tarsy.pipeline.redrive import broker_check

    try:
        broker_check(url)
    except Exception:  # the broker went away again, or the database: the next connection checks anew
        logging.getLogger(__name__).exception("could not check the broker for a restart")
    finally:
        connections.close_all()


app.steps["consumer"].add(BrokerRestartWatch)

SWEEP_INTERVAL_S = float(os.environ.get("TARSY_SWEEP_INTERVAL", "10"))  # lost tasks are found within this
RETENTION_INTERVAL_S = 3600.0
CHECK_ENTRY_PREFIX = "check:"


@app.on_after_configure.connect
def schedule_checks(sender: Celery, **kwargs) -> None:
    """Beat runs each enabled check of `checks:` on its cron schedule (read when the process starts: a changed
    schedule needs a beat restart, like any configuration). An invalid configuration schedules none here;
    `manage.py check_config` and the worker's start refuse it with every problem listed."""
    import logging

    from celery.schedules import crontab

    from agents.config.schema import cron_fields
    from tarsy.config import ConfigError, get_config

    try:
        checks = get_config().checks
    except ConfigError:
        logging.getLogger(__name__).error("invalid configuration: no proactive checks scheduled")
        return
    for check in checks:
        if not check.enabled:
            continue
        minute, hour, day_of_month, month, day_of_week = cron_fields(check.schedule)
        sender.add_periodic_task(
            crontab(minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month,
                    day_of_week=day_of_week),
            sender.signature("tarsy.tasks.run_check", args=(check.name,)), name=CHECK_ENTRY_PREFIX + check.name)


@app.on_after_configure.connect
def schedule_jobs(sender: Celery, **kwargs) -> None:
    """Beat's fixed jobs, added once Celery reads its configuration (reading `app.conf` at import would load
    Django's settings as this module is imported)."""
    sender.add_periodic_task(SWEEP_INTERVAL_S, sender.signature("tarsy.tasks.sweep"), name="sweep")
    sender.add_periodic_task(RETENTION_INTERVAL_S, sender.signature("tarsy.tasks.apply_retention"), name="retention")


def install_enactor() -> None:
    """Decisions handed to `tarsy.decisions.enact_on_commit` become tasks through `tarsy.tasks.enact`.
    Called from `TarsyConfig.ready()`, so web, worker, beat, `serve`, management commands and tests all have
    it before their first request or task; without it an enactment fails loudly."""
    from tarsy.decisions import register_enactor
    from tarsy.tasks import enact

    register_enactor(enact)


@worker_init.connect
def _fail_fast_on_bad_config(**kwargs) -> None:
    """A worker with an invalid configuration must not start taking tasks."""
    from tarsy.config import get_config

    get_config()
    _preload()


def start_outbox_relay() -> None:
    """This process's outbox relay (tarsy/outbox.py), sending through `tarsy.tasks.send`: web processes start it
    from tarsy.asgi (so does `manage.py serve`), workers on worker_ready."""
    from tarsy.outbox import start_relay
    from tarsy.tasks import send

    start_relay(send)


@worker_ready.connect
def _start_worker_relay(**kwargs) -> None:
    """A relay in the worker's parent process: pool threads send on commit in this process and leave the deletes
    of their rows to it; under prefork it sends what the children left behind."""
    start_outbox_relay()


@worker_process_init.connect
def _start_child_relay(**kwargs) -> None:
    """A prefork child's own relay: it sends each task on commit and leaves the delete of the task's outbox row to
    the relay's next pass, one DELETE a second, where it would otherwise commit a DELETE after every task (a WAL
    flush per iteration). The relay thread holds a connection of its own: a child keeps two."""
    start_outbox_relay()


@worker_process_shutdown.connect
def _stop_child_relay(**kwargs) -> None:
    from tarsy.outbox import stop_relay

    stop_relay()


def _forking_pool(pool_cls: Any) -> bool:
    from celery.concurrency import get_implementation
    from celery.concurrency.prefork import TaskPool as PreforkPool

    return issubclass(get_implementation(pool_cls or "prefork"), PreforkPool)


@worker_ready.connect
def _serve_metrics(sender=None, **kwargs) -> None:
    """The worker's metrics endpoint, a thread of the parent process, started once its pool has forked."""
    from tarsy.metrics import serve_worker_metrics

    serve_worker_metrics(forking_pool=_forking_pool(getattr(getattr(sender, "controller", None), "pool_cls", None)))


@worker_init.connect
def _hold_time_limits(sender=None, **kwargs) -> None:
    """Pools other than prefork drop Celery's time limits: TARSy's watchdog watches them (tarsy.watchdog)."""
    if not _forking_pool(getattr(sender, "pool_cls", None)):
        hold_time_limits()


def hold_time_limits() -> None:
    """Watch every task this process runs against its hard limit (see tarsy.watchdog)."""
    from tarsy.watchdog import Watchdog

    watchdog = Watchdog()
    watchdog.start()

    def started(task_id=None, task=None, **kwargs) -> None:
        hard, _ = task.request.timelimit or (None, None)
        watchdog.task_started(task_id, task.name, hard=hard)

    def ended(task_id=None, **kwargs) -> None:
        watchdog.task_ended(task_id)

    task_prerun.connect(started, weak=False)
    task_postrun.connect(ended, weak=False)


def _preload() -> None:
    """Import the heavy SDK modules once in the parent, so forked children start tasks at once (~5 s saved each)."""
    import importlib

    for module in ("tarsy.pipeline.iteration", "tarsy.pipeline.finish", "agents.llm.langchain_provider",
                   "agents.llm.google_native", "agents.mcp.executor", "controllers.react",
                   "controllers.native_thinking", "controllers.synthesis"):
        importlib.import_module(module)
    # Everything imported so far lives as long as the process: keep it out of the collector's scans, in the
    # forked children too (a full collection then walks only what tasks create; pages stay shared).
    gc.freeze()


@worker_process_init.connect
def _fresh_connections(**kwargs) -> None:
    """A forked child must not share its parent's database connections or MCP sessions."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close()


@worker_process_shutdown.connect
def _close_mcp(**kwargs) -> None:
    from agents.mcp.pool import shutdown_pool
    from tarsy.metrics import forget_process

    shutdown_pool()
    forget_process(os.getpid())


@before_task_publish.connect
def _stamp_enqueue_time(headers=None, **kwargs) -> None:
    """The publish time travels with the task, so the worker can count how long it waited in the queue."""
    from tarsy.metrics import ENQUEUED_AT_HEADER

    if headers is not None:
        headers[ENQUEUED_AT_HEADER] = time.time()


@task_prerun.connect
def _count_queue_wait(task=None, **kwargs) -> None:
    from tarsy.metrics import ENQUEUED_AT_HEADER, observe_task_start

    request = task.request
    stamp = getattr(request, ENQUEUED_AT_HEADER, None) or (request.headers or {}).get(ENQUEUED_AT_HEADER)
    observe_task_start(task=task.name, enqueued_at=float(stamp) if stamp else None, eta=request.eta)


@task_postrun.connect
def _count_task(task=None, state=None, **kwargs) -> None:
    from tarsy.metrics import observe_task_end

    observe_task_end(task=task.name, state=state)


@task_postrun.connect
def _give_connections_back(**kwargs) -> None:
    """A pooled connection is not kept by an idle thread between tasks (tarsy.db_connections)."""
    from tarsy.db_connections import connections_give_back

    connections_give_back()
