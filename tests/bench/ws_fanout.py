"""WebSocket fan-out: 100 subscribers of one session on the web server while it streams; commit-to-receipt latency.

The session is submitted before any worker runs, the subscribers connect to
the production web server's `/ws` (uvicorn, `--processes` worker processes)
and subscribe to `session:<id>`, then a worker starts and the
investigation streams (ReAct iterations with streamed thinking, timeline
events, stage and status events). For every persistent event the worker
records when its transaction had committed and the event was handed to the
channel layer (`tests/bench/_worker.py` observes `publisher._send`); each
subscriber records when it received it. Latency = receipt − commit, over all
(event, subscriber) pairs, both stamped with the wall clock (time.time()) of
this machine. Transient `stream.chunk` events are counted too. Subscribers
are spread over `--client-processes` processes, as real subscribers are
separate browsers.

The subscribers stand for browsers on other machines, but here they share
the 2 cores with the server they measure, so their own cost is kept low. The
default client (`--client raw`, tests/bench/ws_client.py) reads every socket
of a process with one epoll loop on plain sockets and reads the type and
event id from the head of each frame (`{"type": …, "event_id": …`, the
server's key order) instead of decoding all of it: about 50 µs of CPU a
frame here, kernel included, against about 63 µs for websockets' asyncio
client on uvloop with one pending `recv` per socket (`--client asyncio`, the
client of the earlier rounds), and 1.2-1.8 s a run for the first client
(asyncio, a `wait_for` per frame, `json.loads` of every frame), which gave
the same server a p50 2-4 times higher on a busy host. `client_cpu_s` in the
JSON is the subscribers' CPU while the session streams. The table in docs/performance-history.md
has the figures of each client.

    python -m tests.bench.ws_fanout [--subscribers 100] [--iterations 10] [--processes 2] [--client-processes 4]
                                    [--client raw|asyncio]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time

from tests.bench import harness

STEP = "Thought: iteration {n}: the pod restarted again; look at the events once more.\nAction: none.none\n" \
       "Action Input: {{}}"
FINAL = "Thought: the evidence is complete.\nFinal Answer: web-1 crash-loops because config map web-cfg is missing."


# The server writes `{"type": "<type>", "event_id": <id>, ...}` (transient events carry no id): the subscriber
# reads the head of each frame instead of decoding all of it, see the module docstring.
_HEAD = re.compile(rb'\{"type": "([^"]*)"(?:, "event_id": (\d+))?')


async def _subscriber(url: str, channel: str, ready: asyncio.Event, counter: list[int], total: int,
                      deadline: float) -> dict:
    from websockets.asyncio.client import connect

    received: dict[int, float] = {}
    chunks = 0
    async with connect(url, max_size=2**24, open_timeout=30) as ws:
        assert json.loads(await ws.recv())["type"] == "connection.established"
        await ws.send(json.dumps({"action": "subscribe", "channel": channel}))
        assert json.loads(await ws.recv())["type"] == "subscription.confirmed"
        counter[0] += 1
        if counter[0] == total:
            ready.set()
        try:
            async with asyncio.timeout_at(deadline):  # loop time is time.monotonic()
                while True:
                    raw = await ws.recv(decode=False)
                    now = time.time()
                    head = _HEAD.match(raw)
                    if head is None:
                        raise AssertionError(f"unexpected frame {raw[:80]!r}")
                    if head[2] is not None:
                        received[int(head[2])] = now
                    elif head[1] == b"stream.chunk":
                        chunks += 1
                    if head[1] == b"session.completed":
                        break
        except TimeoutError:
            pass
    return {"received": received, "chunks": chunks}


async def _run_clients(url: str, channel: str, n: int, timeout: float, on_ready=None) -> list[dict]:
    ready = asyncio.Event()
    counter = [0]
    deadline = time.monotonic() + timeout
    tasks = [asyncio.create_task(_subscriber(url, channel, ready, counter, n, deadline)) for _ in range(n)]
    await asyncio.wait_for(ready.wait(), 60)
    if on_ready is not None:
        await asyncio.get_running_loop().run_in_executor(None, on_ready)
    return await asyncio.gather(*tasks)


def _client_process(url: str, channel: str, n: int, timeout: float, ready, results, client: str) -> None:
    """One client process: n subscribers; says when all are subscribed, then reports."""
    reading_from = []

    def on_ready() -> None:
        reading_from.append(time.process_time())
        ready.put(n)

    if client == "raw":
        from tests.bench import ws_client

        received = ws_client.run(url, channel, n, timeout, on_ready=on_ready)
    else:
        import uvloop

        received = uvloop.run(_run_clients(url, channel, n, timeout, on_ready=on_ready))
    results.put((time.process_time() - reading_from[0], received))  # the CPU the clients took while reading


def _run_client_processes(url: str, channel: str, n: int, processes: int, timeout: float, on_ready,
                          client: str) -> list[dict]:
    """Subscribers spread over several processes, as real subscribers are separate browsers: one Python
    process receiving every frame for 100 sockets would measure its own backlog, not the server's."""
    import multiprocessing
    import queue

    ctx = multiprocessing.get_context("spawn")  # no Django state or DB connection inherited
    ready, results = ctx.Queue(), ctx.Queue()
    shares = [n // processes + (1 if i < n % processes else 0) for i in range(processes)]
    procs = [ctx.Process(target=_client_process, args=(url, channel, k, timeout, ready, results, client),
                         daemon=True)
             for k in shares if k]
    for proc in procs:
        proc.start()

    def take(source, deadline: float):
        while True:
            try:
                return source.get(timeout=0.5)
            except queue.Empty:
                if time.monotonic() > deadline or not all(p.is_alive() or p.exitcode == 0 for p in procs):
                    raise RuntimeError("a subscriber process failed or did not report in time") from None

    try:
        deadline = time.monotonic() + 90
        for _ in procs:
            take(ready, deadline)
        on_ready()
        deadline = time.monotonic() + timeout + 30
        reports = [take(results, deadline) for _ in procs]
        return [result for _, received in reports for result in received], sum(cpu for cpu, _ in reports)
    finally:
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--latency-ms", type=int, default=400, help="per LLM call, spread over its chunks")
    parser.add_argument("--chunk-size", type=int, default=12)
    parser.add_argument("--server", choices=["uvicorn", "daphne"], default="uvicorn")
    parser.add_argument("--processes", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--client-processes", type=int, default=4,
                        help="processes the subscribers are spread over (1: all in this process)")
    parser.add_argument("--client", choices=["raw", "asyncio"], default="raw",
                        help="subscribers on plain sockets and epoll (tests/bench/ws_client.py), or websockets' "
                             "asyncio client on uvloop (the earlier rounds' client)")
    args = parser.parse_args(argv)

    script = {"KubernetesAgent": [STEP.format(n=n) for n in range(1, args.iterations)] + [FINAL],
              "executive_summary": ["web-1 lacks its config map."]}
    bench = harness.bootstrap("ws_fanout", tarsy={
        "defaults": {"llm_provider": "scripted", "max_iterations": args.iterations},
        "queue": {"max_concurrent_sessions": 10},
        "agents": harness.BASE_AGENTS,
    }, providers={"scripted": harness.scripted(script, latency_ms=args.latency_ms, chunk_size=args.chunk_size)})
    from tarsy.models import AlertSession, Event
    from tarsy.services.intake.alerts import session_submit

    processes = args.processes if args.server == "uvicorn" else 1
    _server, base = bench.start_server(server=args.server, processes=processes)
    session = session_submit(data={"alert": "CrashLoopBackOff", "pod": "web-1"})
    channel = f"session:{session.id}"
    workers = []

    def start_worker() -> None:
        workers.append(bench.start_worker("w1", concurrency=2))

    url, timeout = base.replace("http", "ws") + "/ws", 120 + args.iterations * args.latency_ms / 1000 * 3
    if args.client_processes > 1:
        results, client_cpu_s = _run_client_processes(url, channel, args.subscribers, args.client_processes, timeout,
                                                       start_worker, args.client)
    elif args.client == "raw":
        from tests.bench import ws_client

        results = ws_client.run(url, channel, args.subscribers, timeout, on_ready=start_worker)
        client_cpu_s = float("nan")  # this process also runs the worker's start and the benchmark
    else:
        results = asyncio.run(_run_clients(url, channel, args.subscribers, timeout, on_ready=start_worker))
        client_cpu_s = float("nan")
    harness.wait_terminal([str(session.id)], timeout=60, workers=workers)
    time.sleep(0.5)
    for worker in workers:
        worker.stop()

    published = {r["event_id"]: r for r in bench.trace() if r["kind"] == "publish"}
    # The clients stop at session.completed: what the session publishes after it (its triage state) is not awaited.
    rows = Event.objects.filter(channel=channel)
    completed = rows.filter(type="session.completed").values_list("id", flat=True).first()
    if completed is not None:
        rows = rows.filter(id__lte=completed)
    stored = set(rows.values_list("id", flat=True))
    latencies, missing = [], 0
    for result in results:
        for event_id in stored:
            if event_id not in published:
                continue
            if event_id in result["received"]:
                latencies.append((result["received"][event_id] - published[event_id]["t"]) * 1000)
            else:
                missing += 1
    status = AlertSession.objects.get(id=session.id).status
    by_event = []  # median latency of each event, in publish order: growth means a backlog somewhere
    for event_id in sorted((e for e in stored if e in published), key=lambda e: published[e]["t"]):
        got = [(r["received"][event_id] - published[event_id]["t"]) * 1000 for r in results
               if event_id in r["received"]]
        if got:
            by_event.append(harness.percentile(got, 50))
    chunks = [r["chunks"] for r in results]
    s = harness.summary_ms(latencies)
    print(f"\nws_fanout: {args.subscribers} subscribers in {max(1, args.client_processes)} client process(es) on one "
          f"session ({args.server} x {processes} process(es), Redis fan-out), "
          f"{args.iterations} streamed iterations; session {status}")
    print(f"  persistent events: {len(stored)} stored, {s['n']} deliveries measured, {missing} not received")
    print(f"  commit -> receipt  p50 {s['p50']:.1f} ms  p95 {s['p95']:.1f} ms  p99 {s['p99']:.1f} ms  "
          f"max {max(latencies) if latencies else float('nan'):.1f} ms")
    if by_event:
        print(f"  per-event median latency, first 3: {[round(v, 1) for v in by_event[:3]]}, "
              f"last 3: {[round(v, 1) for v in by_event[-3:]]}")
    print(f"  stream.chunk events per subscriber: min {min(chunks)} max {max(chunks)}")
    frames = sum(len(r["received"]) + r["chunks"] for r in results)
    print(f"  subscribers' CPU ({args.client} client): {client_cpu_s:.2f} s for {frames} frames "
          f"({client_cpu_s / max(frames, 1) * 1e6:.0f} µs a frame, from the last subscription to the end)")
    print(f"  machine: {harness.machine()}")
    figures = {"benchmark": "ws_fanout", "p50_ms": round(s["p50"], 2), "p99_ms": round(s["p99"], 2),
               "p95_ms": round(s["p95"], 2), "subscribers": args.subscribers, "server": args.server,
               "processes": processes, "client_processes": max(1, args.client_processes), "client": args.client,
               "client_cpu_s": round(client_cpu_s, 2),
               "events": len(stored), "deliveries": s["n"], "missing": missing, "machine": harness.machine()}
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
