"""Scale-out: sessions per minute with 1, 2 and 4 worker processes, and efficiency against linear.

Every LLM call of the scripted provider takes 200 ms (I/O-bound work, like a
real model); a session is 3 ReAct iterations plus its executive summary, so
4 calls. For each worker count the benchmark submits the same batch of
sessions (200 by default) with `queue.max_concurrent_sessions` far above it,
and measures from submission until every session is terminal. Each worker
process has the same fixed prefork concurrency.

    python -m tests.bench.scale_out [--sessions 200] [--workers 1,2,4] [--concurrency 2]

efficiency(N) = rate(N) / (N × rate(1)); `efficiency` is the value at the
largest worker count.
"""

from __future__ import annotations

import argparse
import time

from tests.bench import harness

STEP = "Thought: check step {n}.\nAction: none.none\nAction Input: {{}}"
FINAL = "Thought: done.\nFinal Answer: node-3 disk pressure evicts the pods."


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--concurrency", type=int, default=2, help="prefork processes per worker")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]

    script = {"KubernetesAgent": [STEP.format(n=n) for n in range(1, args.iterations)] + [FINAL],
              "executive_summary": ["node-3 is under disk pressure."]}
    bench = harness.bootstrap("scale_out", tarsy={
        "defaults": {"llm_provider": "scripted", "max_iterations": args.iterations + 2},
        "queue": {"max_concurrent_sessions": args.sessions * 10},
        "agents": harness.BASE_AGENTS,
    }, providers={"scripted": harness.scripted(script, latency_ms=args.latency_ms)})
    from tarsy.models import AlertSession
    from tarsy.services.intake.alerts import session_submit

    rates: dict[str, float] = {}
    details = {}
    for n in counts:
        names = [f"n{n}w{i}" for i in range(1, n + 1)]
        workers = [bench.start_worker(name, concurrency=args.concurrency, trace=False) for name in names]
        bench.wait_workers(names)
        started = time.monotonic()
        ids = [str(session_submit(data={"alert": "PodEvicted", "node": "node-3", "n": i}).id)
               for i in range(args.sessions)]
        submitted = time.monotonic() - started
        harness.wait_terminal(ids, timeout=60 + 5 * args.sessions * (args.iterations + 1) * args.latency_ms / 1000
                              / max(1, n * args.concurrency) * 3, workers=workers, interval=0.1)
        elapsed = time.monotonic() - started
        for worker in workers:
            worker.stop()
        statuses = set(AlertSession.objects.filter(id__in=ids).values_list("status", flat=True))
        rates[str(n)] = round(args.sessions / elapsed * 60, 1)
        ideal_s = args.sessions * (args.iterations + 1) * args.latency_ms / 1000 / (n * args.concurrency)
        details[str(n)] = {"seconds": round(elapsed, 2), "submit_s": round(submitted, 2), "statuses": sorted(statuses),
                           "llm_bound_seconds": round(ideal_s, 2)}
        print(f"  {n} worker(s) x {args.concurrency}: {args.sessions} sessions in {elapsed:.1f} s "
              f"({rates[str(n)]:.0f}/min; LLM time alone would take {ideal_s:.1f} s); statuses {sorted(statuses)}",
              flush=True)

    base = rates[str(counts[0])] / counts[0]
    efficiency = {str(n): round(rates[str(n)] / (n * base), 3) for n in counts}
    print(f"\nscale_out: {args.sessions} sessions x ({args.iterations} iterations + summary) at {args.latency_ms} ms "
          f"per LLM call; prefork concurrency {args.concurrency} per worker")
    for n in counts:
        print(f"  {n} worker(s): {rates[str(n)]:7.1f} sessions/min  efficiency {efficiency[str(n)]:.2f}")
    print(f"  machine: {harness.machine()}")
    figures = {"benchmark": "scale_out", "sessions_per_min": rates, "efficiency": efficiency[str(counts[-1])],
               "efficiency_by_workers": efficiency, "concurrency_per_worker": args.concurrency,
               "runs": details, "machine": harness.machine()}
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
