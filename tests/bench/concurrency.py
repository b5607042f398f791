"""Investigations in flight on one worker process: threads or prefork, with every LLM call taking seconds.

A session is `--iterations` ReAct iterations plus its executive summary. All `--sessions` are submitted at once
(in one transaction, the session cap far above them) to one worker; samplers read, every 250 ms, the iterations
holding a lease (in flight), the worker's resident and proportional set size (with its children, for prefork)
and the PostgreSQL connections of the benchmark database. The LLM is the scripted provider (a sleep per answer) or,
with `--provider openai`, the real LangChain/OpenAI path against a local streaming OpenAI-compatible server
that answers each request from its conversation.

    python -m tests.bench.concurrency [--pool threads|prefork] [-c N] [--sessions S] [--latency-ms L]
                                      [--iterations 3] [--provider scripted|openai] [--patience SECONDS]

`worker_cpu_s` is the CPU time the worker (and its children) used: on a loaded or small machine the sessions
finish when the worker has had that much CPU, whatever the LLM latency; `--patience` then waits longer than
the default (120 s plus three times the LLM time per slot).

Errors: sessions not completed, failed LLM calls. Duplicates: an iteration recorded twice, a message or
timeline sequence number repeated (tests/support/sessions.py's rules).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path
from typing import Any

from tests.bench import harness

STEP = "Thought: check step {n}.\nAction: none.none\nAction Input: {{}}"
FINAL = "Thought: done.\nFinal Answer: node-3 disk pressure evicts the pods."
SAMPLE_S = 0.25


def _tree(pid: int) -> list[int]:
    """The process and its descendants (prefork children)."""
    pids, index = [pid], 0
    while index < len(pids):
        try:
            children = Path(f"/proc/{pids[index]}/task/{pids[index]}/children").read_text().split()
        except OSError:
            children = []
        pids += [int(child) for child in children]
        index += 1
    return pids


def _memory_mb(pid: int) -> tuple[float, float]:
    """RSS and PSS of the process tree, in MB."""
    rss = pss = 0
    for member in _tree(pid):
        try:
            for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


class Peaks:
    """Samples the figures while the sessions run."""

    def __init__(self, worker_pid: int, db_name: str) -> None:
        self.worker_pid, self.db_name = worker_pid, db_name
        self.inflight = self.connections = 0
        self.rss = self.pss = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        from django.db import connection
        from django.utils import timezone

        from tarsy.models import AgentExecution

        while not self._stop.is_set():
            self.inflight = max(self.inflight, AgentExecution.objects.filter(
                lease_expires_at__gt=timezone.now()).count())
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                               [self.db_name])
                self.connections = max(self.connections, cursor.fetchone()[0])
            rss, pss = _memory_mb(self.worker_pid)
            self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)
            self._stop.wait(SAMPLE_S)
        connection.close()


def _cpu_s(pid: int) -> float:
    """User and system CPU time of the process tree, in seconds (/proc/<pid>/stat, clock ticks)."""
    ticks, total = os.sysconf("SC_CLK_TCK"), 0
    for member in _tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def _openai_server(iterations: int, latency_ms: int):
    """A streaming OpenAI-compatible server answering from the conversation: a continue step until the
    conversation holds `iterations - 1` answers, then the final answer; the latency spread over the chunks."""
    from tests.fakes.fake_openai import FakeOpenAI

    class Conversational(FakeOpenAI):
        def build_reply(self, spec, request, stream):
            messages = (request.body or {}).get("messages") or []
            answered = sum(1 for m in messages if m.get("role") == "assistant")
            text = STEP.format(n=answered + 1) if answered < iterations - 1 else FINAL
            reply = super().build_reply({"text": text, "chunk_size": 16}, request, stream)
            reply.event_delay_s = latency_ms / 1000 / max(len(reply.events) - 1, 1)
            return reply

    server = Conversational()
    server.requests = _Forgetful()
    return server.start()


class _Forgetful(list):
    """Keeps no request bodies: a long run would hold every conversation."""

    def append(self, item: Any) -> None:
        pass


def _duplicates(ids: list[str]) -> int:
    from tests.support.sessions import assert_no_duplicates

    found = 0
    for session_id in ids:
        try:
            assert_no_duplicates(session_id)
        except AssertionError:
            found += 1
    return found


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", choices=("threads", "prefork"), default="threads")
    parser.add_argument("-c", "--concurrency", type=int, default=64)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--latency-ms", type=int, default=5000)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--provider", choices=("scripted", "openai"), default="scripted")
    parser.add_argument("--patience", type=float, default=None, help="seconds to wait for the sessions")
    args = parser.parse_args(argv)

    script = {"KubernetesAgent": [STEP.format(n=n) for n in range(1, args.iterations)] + [FINAL],
              "executive_summary": ["node-3 is under disk pressure."]}
    fake = _openai_server(args.iterations, args.latency_ms) if args.provider == "openai" else None
    provider = (harness.scripted(script, latency_ms=args.latency_ms) if fake is None else
                {"type": "openai", "model": "fake-model", "base_url": f"{fake.url}/v1"})
    bench = harness.bootstrap("concurrency", tarsy={
        "defaults": {"llm_provider": "llm", "max_iterations": args.iterations + 2, "iteration_timeout": "120s"},
        "queue": {"max_concurrent_sessions": args.sessions * 10},
        "agents": harness.BASE_AGENTS,
    }, providers={"llm": provider})
    from django.db import transaction
    from django.db.models import Count

    from tarsy.models import AlertSession, LLMInteraction
    from tarsy.services.intake.alerts import session_submit

    worker = bench.start_worker("c1", concurrency=args.concurrency, pool=args.pool, trace=False)
    bench.wait_workers(["c1"])
    idle_rss, idle_pss = _memory_mb(worker.popen.pid)
    idle_cpu = _cpu_s(worker.popen.pid)
    with Peaks(worker.popen.pid, bench.db_name) as peaks:
        started = time.monotonic()
        with transaction.atomic():  # all pending at once: one dispatch starts them together
            ids = [str(session_submit(data={"alert": "PodEvicted", "node": "node-3", "n": i}).id)
                   for i in range(args.sessions)]
        calls = args.sessions * (args.iterations + 1)
        patience = args.patience or 120 + 3 * calls * args.latency_ms / 1000 / max(1, args.concurrency)
        harness.wait_terminal(ids, timeout=patience, workers=[worker], interval=0.25)
        elapsed = time.monotonic() - started
    cpu = _cpu_s(worker.popen.pid) - idle_cpu
    worker.stop()
    if fake is not None:
        fake.stop()

    statuses = dict(AlertSession.objects.filter(id__in=ids).values_list("status").annotate(n=Count("id")))
    failed_calls = LLMInteraction.objects.filter(session_id__in=ids, success=False).count()
    figures = {
        "benchmark": "concurrency", "pool": args.pool, "concurrency": args.concurrency, "sessions": args.sessions,
        "latency_ms": args.latency_ms, "iterations": args.iterations, "provider": args.provider,
        "seconds": round(elapsed, 1), "sessions_per_min": round(args.sessions / elapsed * 60, 1),
        "inflight_peak": peaks.inflight, "rss_mb_peak": round(peaks.rss, 1), "pss_mb_peak": round(peaks.pss, 1),
        "rss_mb_idle": round(idle_rss, 1), "pss_mb_idle": round(idle_pss, 1),
        "pg_connections_peak": peaks.connections, "worker_cpu_s": round(cpu, 1), "statuses": statuses,
        "errors": args.sessions - statuses.get("completed", 0) + failed_calls,
        "duplicates": _duplicates(ids), "machine": harness.machine(),
    }
    print(f"\nconcurrency: {args.sessions} sessions x ({args.iterations} iterations + summary) at "
          f"{args.latency_ms} ms per LLM call ({args.provider}); one worker, {args.pool} -c {args.concurrency}")
    print(f"  {figures['sessions_per_min']} sessions/min in {figures['seconds']} s; in flight at most "
          f"{peaks.inflight}; worker RSS {figures['rss_mb_peak']} MB (PSS {figures['pss_mb_peak']}); "
          f"PostgreSQL connections at most {peaks.connections}; worker CPU {figures['worker_cpu_s']} s; "
          f"errors {figures['errors']}, duplicates {figures['duplicates']}; statuses {statuses}")
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
