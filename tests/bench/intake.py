"""Alert intake: POST /api/v1/alerts at concurrency 32 for 30 s against the web server; then prove nothing was lost.

The load client is a small keep-alive HTTP/1.1 client on asyncio (32
connections, each sending its next request as soon as the previous answer
arrived), light enough not to be the bottleneck. By default one web server
(uvicorn with `--processes` worker processes, WEB_CONCURRENCY in the image)
serves, as `web` runs in the compose file; `--servers N` starts N servers
and spreads the connections over them, as N web replicas behind a
Kubernetes Service would be; `--server gunicorn` serves the same views from a WSGI
server (gthread workers) instead. Workers (zero-latency scripted
provider) start after the load phase by default so the figure is the web
tier's own (`--workers-during-load` runs them alongside, sharing the CPUs),
then drain the queue; every accepted alert must end as a completed session.

    python -m tests.bench.intake [--seconds 30] [--concurrency 32] [--servers 1] [--processes 2]
                                  [--server uvicorn|gunicorn|daphne]

`lost` = accepted alerts (202 with a session id) whose session does not exist
or did not complete; `unfinished` = sessions still not terminal when the
drain timed out (not counted as lost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from tests.bench import harness

ALERT = {"alert_type": "kubernetes", "data": {"alertname": "KubePodCrashLooping", "namespace": "payments",
                                               "pod": "payments-api-7d9f", "severity": "critical",
                                               "description": "Pod is restarting 5 times / 10 minutes"}}


async def _client(host: str, port: int, deadline: float, latencies: list[float], accepted: list[str],
                  errors: list[str]) -> None:
    body = json.dumps(ALERT).encode()
    request = (f"POST /api/v1/alerts HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n").encode() + body
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            writer.write(request)
            await writer.drain()
            status_line = await reader.readline()
            if not status_line:
                errors.append("connection closed")
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            length, close = 0, False
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
                elif name.lower() == "connection" and value.strip().lower() == "close":
                    close = True
            payload = await reader.readexactly(length) if length else b""
            latencies.append((time.perf_counter() - started) * 1000)
            status = int(status_line.split()[1])
            if status == 202:
                accepted.append(json.loads(payload)["session_id"])
            else:
                errors.append(f"{status} {payload[:200]!r}")
            if close:
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
    finally:
        writer.close()


async def _load(targets: list[tuple[str, int]], concurrency: int, seconds: float):
    latencies: list[float] = []
    accepted: list[str] = []
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    await asyncio.gather(*(_client(*targets[i % len(targets)], deadline, latencies, accepted, errors)
                           for i in range(concurrency)))
    return latencies, accepted, errors, time.monotonic() - started


def _tree_cpu_s(root: int) -> float:
    """CPU time (user + system) of `root` and its descendants, from /proc: the web tier's cost, whatever the
    wall clock of a shared host says."""
    ticks = os.sysconf("SC_CLK_TCK")
    pending, total = [root], 0.0
    while pending:
        pid = pending.pop()
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--servers", type=int, default=1, help="web servers (replicas)")
    parser.add_argument("--server", choices=["uvicorn", "daphne", "gunicorn"], default="uvicorn")
    parser.add_argument("--processes", type=int, default=2, help="web processes per server (uvicorn, gunicorn)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes that drain the sessions")
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--workers-during-load", action="store_true")
    parser.add_argument("--drain-timeout", type=float, default=900)
    args = parser.parse_args(argv)

    bench = harness.bootstrap("intake", tarsy={
        "defaults": {"llm_provider": "scripted"},
        "queue": {"max_concurrent_sessions": 64},
        "agents": harness.BASE_AGENTS,
        # Every request posts the same alert: with dedup on they would all join one session (tests.bench.storm
        # measures that path); here each is a new session, as the figure has always been.
        "agent_chains": {"kubernetes": {"alert_types": ["kubernetes"], "dedup": "off",
                                        "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]}},
    }, providers={"scripted": harness.scripted({
        "KubernetesAgent": ["Thought: seen it.\nFinal Answer: payments-api crash-loops on a bad config."],
        "executive_summary": ["payments-api crash-loops."]})})
    from tarsy.models import TERMINAL_SESSION_STATUSES, AlertSession

    processes = args.processes if args.server != "daphne" else 1
    servers = [bench.start_server(f"{args.server}{i}", server=args.server, processes=processes)
               for i in range(args.servers)]
    targets = [("127.0.0.1", int(base.rsplit(":", 1)[1])) for _child, base in servers]
    names = [f"w{i}" for i in range(1, args.workers + 1)]

    def start_workers() -> list:
        started = [bench.start_worker(name, concurrency=args.worker_concurrency, trace=False) for name in names]
        bench.wait_workers(names)
        return started

    workers = start_workers() if args.workers_during_load else []
    cpu_before = sum(_tree_cpu_s(child.popen.pid) for child, _base in servers)
    latencies, accepted, errors, elapsed = asyncio.run(_load(targets, args.concurrency, args.seconds))
    server_cpu_s = sum(_tree_cpu_s(child.popen.pid) for child, _base in servers) - cpu_before
    cpu_per_post = server_cpu_s * 1000 / max(len(accepted), 1)
    rps = len(latencies) / elapsed
    print(f"  load: {len(latencies)} requests in {elapsed:.1f} s, {len(accepted)} accepted, {len(errors)} errors"
          f"{' e.g. ' + errors[0] if errors else ''}", flush=True)
    for child, _base in servers:  # intake is measured; stopping web also frees its database connections
        child.stop()
    if not workers:
        workers = start_workers()
    drain_started = time.monotonic()
    unfinished = 0
    while True:
        open_count = AlertSession.all_objects.filter(id__in=accepted).exclude(
            status__in=TERMINAL_SESSION_STATUSES).count()
        if open_count == 0:
            break
        if time.monotonic() - drain_started > args.drain_timeout:
            unfinished = open_count
            break
        for worker in workers:
            if not worker.alive():
                raise RuntimeError(f"{worker.name} exited:\n{worker.log()[-3000:]}")
        time.sleep(1)
    drain_s = time.monotonic() - drain_started
    for worker in workers:
        worker.stop()
    rows = dict(AlertSession.all_objects.filter(id__in=accepted).values_list("id", "status"))
    by_status: dict[str, int] = {}
    for status in rows.values():
        by_status[status] = by_status.get(status, 0) + 1
    lost = sum(1 for sid in accepted if rows.get(__import__("uuid").UUID(sid)) not in ("completed",)) - unfinished
    s = harness.summary_ms(latencies)
    where = f"{args.servers} {args.server} server(s) x {processes} process(es)"
    print(f"\nintake: POST /api/v1/alerts, {args.concurrency} concurrent keep-alive clients for {args.seconds:.0f} s "
          f"against {where}; workers {'during' if args.workers_during_load else 'after'} the load")
    print(f"  {rps:.1f} requests/s; latency p50 {s['p50']:.1f} ms  p95 {s['p95']:.1f} ms  p99 {s['p99']:.1f} ms")
    print(f"  accepted {len(accepted)}; sessions by status {by_status}; drained in {drain_s:.0f} s "
          f"({len(accepted) / max(drain_s, 1e-9):.1f} sessions/s with {args.workers} x {args.worker_concurrency} "
          f"worker processes); lost {lost}; unfinished {unfinished}")
    print(f"  server CPU {server_cpu_s:.1f} s over the load: {cpu_per_post:.2f} ms per accepted POST")
    print(f"  machine: {harness.machine()}")
    figures = {"benchmark": "intake", "rps": round(rps, 1), "p50_ms": round(s["p50"], 2), "p99_ms": round(s["p99"], 2),
               "lost": lost, "accepted": len(accepted), "errors": len(errors), "unfinished": unfinished,
               "servers": args.servers, "server": args.server, "processes": processes,
               "drain_s": round(drain_s, 1), "server_cpu_ms_per_post": round(cpu_per_post, 2),
               "machine": harness.machine()}
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
