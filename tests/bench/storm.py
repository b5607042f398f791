"""Alert storm: 2,000 alerts in 60 s from 200 distinct alerts (10 repeats each, shuffled) at concurrency 32 against
the web server, workers investigating alongside; then prove every alert was counted once and nothing was lost.

Repeats differ as real ones do (restart counter, timestamps), so the fingerprint is the one intake derives from
the data. Alerts are paced evenly over the run (the storm's rate, not the server's limit); 32 requests may be in
flight at once, and repeats of one alert arrive while its session is queued, running or already completed.

    python -m tests.bench.storm [--alerts 2000] [--distinct 200] [--seconds 60] [--concurrency 32]
                                [--servers 1] [--processes 2]

`sessions` = sessions created; `occurrences` = alerts they counted (their occurrence_count summed); `lost` =
accepted alerts not counted by any session, plus sessions that did not complete; `rps` = answered requests per
second of the load phase.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from datetime import UTC, datetime

import httpx

from tests.bench import harness


def _alerts(distinct: int, repeats: int, seed: int) -> list[dict]:
    alerts = []
    for k in range(distinct):
        for n in range(repeats):
            alerts.append({"alert_type": "kubernetes", "data": {
                "alertname": "KubePodCrashLooping", "namespace": f"team-{k % 20}", "pod": f"api-{k}-7d9f",
                "severity": ["critical", "high", "warning", "info"][k % 4],
                "description": f"Pod is restarting {3 + n} times / 10 minutes",
                "restartCount": 3 + n, "startsAt": datetime.now(UTC).isoformat()}})
    random.Random(seed).shuffle(alerts)
    return alerts


async def _load(targets: list[str], alerts: list[dict], concurrency: int, seconds: float):
    """Alert i goes out at start + i × seconds/len(alerts), on whichever of `concurrency` connections is free."""
    interval = seconds / len(alerts)
    queue: asyncio.Queue[tuple[int, dict]] = asyncio.Queue()
    for item in enumerate(alerts):
        queue.put_nowait(item)
    answers: list[tuple[int, str]] = []  # (alert index, session id)
    errors: list[str] = []
    latencies: list[float] = []
    started = time.monotonic()

    async def client(slot: int) -> None:
        base = targets[slot % len(targets)]
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            while not queue.empty():
                index, alert = queue.get_nowait()
                delay = started + index * interval - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                sent = time.perf_counter()
                try:
                    response = await http.post("/api/v1/alerts", json=alert)
                except httpx.HTTPError as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                latencies.append((time.perf_counter() - sent) * 1000)
                if response.status_code == 202:
                    answers.append((index, response.json()["session_id"]))
                else:
                    errors.append(f"{response.status_code} {response.text[:200]}")

    await asyncio.gather(*(client(i) for i in range(concurrency)))
    return answers, errors, latencies, time.monotonic() - started


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alerts", type=int, default=2000)
    parser.add_argument("--distinct", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--servers", type=int, default=1, help="web servers (replicas)")
    parser.add_argument("--processes", type=int, default=2, help="uvicorn worker processes per server")
    parser.add_argument("--workers", type=int, default=2, help="worker processes investigating alongside")
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--drain-timeout", type=float, default=600)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args(argv)
    if args.alerts % args.distinct:
        parser.error("--alerts must be a multiple of --distinct")

    bench = harness.bootstrap("storm", tarsy={
        "defaults": {"llm_provider": "scripted"},
        "queue": {"max_concurrent_sessions": 64},
        "agents": harness.BASE_AGENTS,
    }, providers={"scripted": harness.scripted({
        "KubernetesAgent": ["Thought: seen it.\nFinal Answer: the pod crash-loops on a bad config."],
        "executive_summary": ["The pod crash-loops."]})})
    from django.db.models import Sum

    from tarsy.models import AlertOccurrence, AlertSession

    servers = [bench.start_server(f"uvicorn{i}", processes=args.processes) for i in range(args.servers)]
    names = [f"w{i}" for i in range(1, args.workers + 1)]
    workers = [bench.start_worker(name, concurrency=args.worker_concurrency, trace=False) for name in names]
    bench.wait_workers(names)

    alerts = _alerts(args.distinct, args.alerts // args.distinct, args.seed)
    answers, errors, latencies, elapsed = asyncio.run(
        _load([base for _child, base in servers], alerts, args.concurrency, args.seconds))
    print(f"  load: {len(answers)} accepted of {len(alerts)} in {elapsed:.1f} s, {len(errors)} errors"
          f"{' e.g. ' + errors[0] if errors else ''}", flush=True)
    for child, _base in servers:
        child.stop()
    session_ids = sorted({sid for _index, sid in answers})
    unfinished = 0
    try:
        drain_s = harness.wait_terminal(session_ids, args.drain_timeout, workers)
    except RuntimeError:
        drain_s = args.drain_timeout
        unfinished = AlertSession.all_objects.filter(id__in=session_ids, status__in=["pending", "in_progress"]).count()
    for worker in workers:
        worker.stop()

    sessions = AlertSession.all_objects.count()
    counted = AlertSession.all_objects.aggregate(n=Sum("occurrence_count"))["n"] or 0
    kept = AlertOccurrence.objects.count() + sessions  # each repeat's data is kept, the first alert's in the session
    not_completed = AlertSession.all_objects.exclude(status="completed").count()
    # One session per distinct alert: the answers for one alert's repeats all name the same session.
    by_alert: dict[str, set[str]] = {}
    for index, sid in answers:
        by_alert.setdefault(alerts[index]["data"]["pod"], set()).add(sid)
    split = sum(1 for sids in by_alert.values() if len(sids) > 1)
    lost = max(len(answers) - counted, 0) + not_completed
    s = harness.summary_ms(latencies)
    rps = len(latencies) / elapsed
    print(f"\nstorm: {len(alerts)} alerts from {args.distinct} distinct ones, {args.concurrency} concurrent clients "
          f"over {args.seconds:.0f} s against {args.servers} server(s) x {args.processes} process(es), "
          f"{args.workers} x {args.worker_concurrency} workers alongside")
    print(f"  {rps:.1f} requests/s; latency p50 {s['p50']:.1f} ms  p95 {s['p95']:.1f} ms  p99 {s['p99']:.1f} ms")
    print(f"  sessions {sessions}; occurrences counted {counted}, kept {kept}; alerts split over sessions {split}; "
          f"not completed {not_completed}; drained in {drain_s:.0f} s; lost {lost}")
    print(f"  machine: {harness.machine()}")
    figures = {"benchmark": "storm", "alerts": len(answers), "sessions": sessions, "occurrences": counted,
               "lost": lost, "rps": round(rps, 1), "errors": len(errors), "kept": kept, "split": split,
               "unfinished": unfinished, "p50_ms": round(s["p50"], 2), "p99_ms": round(s["p99"], 2),
               "drain_s": round(drain_s, 1), "machine": harness.machine()}
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
