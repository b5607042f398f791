"""Per-iteration orchestration overhead: what an iteration costs besides the LLM call.

Sessions of 20 ReAct iterations on a zero-latency scripted provider with no
tools run one at a time on a real worker (prefork, concurrency 2; `--pool threads` for the deployed
default, whose relay batches the deletes of sent outbox rows where a prefork child commits one per task). For each
pair of consecutive iterations of an execution the overhead is

    start of LLM call n+1  −  start of LLM call n  −  time spent inside the provider in call n

i.e. everything between the end of one LLM call and the start of the next:
parsing, recording the interaction, messages and timeline events (each
committed), the compare-and-set that completes the iteration, the Celery hop
through Redis, the claim of the next iteration and rebuilding its context.
Timestamps and SQL statement counts come from observation hooks in the worker
(tests/bench/_worker.py); product code runs unchanged.

    python -m tests.bench.iteration_overhead [--sessions 11] [--iterations 20] [--pool prefork|threads]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

from tests.bench import harness

CONTINUE = "Thought: step {n}: the evidence so far is inconclusive, look again.\nAction: none.none\nAction Input: {{}}"
FINAL = "Thought: enough evidence.\nFinal Answer: payments-api is OOMKilled: its 256Mi limit is too low."


def _script(iterations: int) -> dict:
    turns = [CONTINUE.format(n=n) for n in range(1, iterations)] + [FINAL]
    return {"KubernetesAgent": turns, "executive_summary": ["payments-api needs a higher memory limit."]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=11, help="sessions to run; the first is a warm-up")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes or threads")
    parser.add_argument("--pool", choices=("prefork", "threads"), default="prefork")
    args = parser.parse_args(argv)

    bench = harness.bootstrap("iteration_overhead", tarsy={
        "defaults": {"llm_provider": "scripted", "max_iterations": args.iterations},
        "queue": {"max_concurrent_sessions": 1},
        "agents": harness.BASE_AGENTS,
    }, providers={"scripted": harness.scripted(_script(args.iterations))})
    from tarsy.models import AgentExecution, LLMInteraction
    from tarsy.services.intake.alerts import session_submit

    worker = bench.start_worker("w1", concurrency=args.concurrency, pool=args.pool)
    bench.wait_workers(["w1"])
    ids = []
    for index in range(args.sessions):
        session = session_submit(data={"alert": "PodOOMKilled", "pod": f"payments-api-{index}"})
        harness.wait_terminal([str(session.id)], timeout=120, workers=[worker], interval=0.05)
        ids.append(str(session.id))
    time.sleep(0.5)  # the last task's trace line is written after its transaction commits
    worker.stop()

    measured = set(ids[1:]) if len(ids) > 1 else set(ids)
    executions = {str(e.id): str(e.session_id) for e in AgentExecution.objects.filter(session_id__in=measured)}
    statuses = list(AgentExecution.objects.filter(session_id__in=measured).values_list("status", flat=True))
    records = bench.trace()
    tasks = [r for r in records if r["kind"] == "task"]
    iteration_tasks = [t for t in tasks if t["name"] == "tarsy.tasks.run_iteration" and t["args"][0] in executions]

    calls: dict[str, dict[int, dict]] = defaultdict(dict)
    task_by_key: dict[tuple[str, int], dict] = {}
    for task in iteration_tasks:
        task_by_key[(task["args"][0], task["args"][1])] = task
        for call in task["llm"]:
            calls[call["execution_id"]][call["iteration"]] = call
    overhead, gap, hop = [], [], []
    for execution_id, by_iteration in calls.items():
        for n in sorted(by_iteration):
            if n + 1 in by_iteration:
                this, nxt = by_iteration[n], by_iteration[n + 1]
                overhead.append((nxt["start"] - this["start"] - this["inside_s"]) * 1000)
                gap.append((nxt["start"] - this["end"]) * 1000)
            if (execution_id, n + 1) in task_by_key and (execution_id, n) in task_by_key:
                hop.append((task_by_key[(execution_id, n + 1)]["t_pre"] - task_by_key[(execution_id, n)]["t_post"])
                           * 1000)

    # Cross-check from the stored rows alone: LLMInteraction.created_at is stamped after the call ends.
    rows = defaultdict(list)
    for row in LLMInteraction.objects.filter(execution_id__in=list(executions), interaction_type="iteration"):
        rows[str(row.execution_id)].append(row)
    row_gaps = []
    for items in rows.values():
        items.sort(key=lambda r: r.iteration)
        for a, b in zip(items, items[1:], strict=False):
            row_gaps.append(((b.created_at - a.created_at).total_seconds() * 1000) - b.duration_ms)

    wall = [(t["t_post"] - t["t_pre"]) * 1000 for t in iteration_tasks]
    db = [t["db_ms"] for t in iteration_tasks]
    provider = [sum(c["inside_s"] for c in t["llm"]) * 1000 for t in iteration_tasks]
    queries = [t["queries"] for t in iteration_tasks]
    commits = [t.get("commits", 0) for t in iteration_tasks]
    # A continuing iteration: one an execution follows with another (its last ends the execution and its stage).
    last = {e: max(n for (e2, n) in task_by_key if e2 == e) for e, _ in task_by_key}
    continuing = [t for t in iteration_tasks if t["args"][1] < last[t["args"][0]]]
    commit_ms = [t.get("commit_ms", 0.0) for t in iteration_tasks]
    cpu_ms = [t.get("cpu_ms", 0.0) for t in iteration_tasks]
    session_tasks = [t for t in tasks if t["name"] != "tarsy.tasks.run_iteration"]
    per_session_queries = {}
    for name in sorted({t["name"] for t in session_tasks}):
        mine = [t["queries"] for t in session_tasks if t["name"] == name]
        per_session_queries[name] = statistics.median(mine)

    o, g = harness.summary_ms(overhead), harness.summary_ms(gap)
    print(f"\niteration_overhead: {len(measured)} sessions x {args.iterations} iterations "
          f"(+1 warm-up), worker {args.pool} -c {args.concurrency}; executions {sorted(set(statuses))}")
    print(f"  overhead between LLM calls  p50 {o['p50']:.1f} ms  p95 {o['p95']:.1f} ms  mean {o['mean']:.1f} ms "
          f"(n={o['n']})")
    print(f"  end-of-call -> next call    p50 {g['p50']:.1f} ms  p95 {g['p95']:.1f} ms")
    print(f"  from stored rows            p50 {harness.percentile(row_gaps, 50):.1f} ms  "
          f"(LLMInteraction.created_at - duration_ms, ±1 ms)")
    print("  where an iteration's time goes (medians):")
    print(f"    run_iteration task wall   {statistics.median(wall):.1f} ms")
    print(f"      SQL ({statistics.median(queries):.0f} statements) {statistics.median(db):.1f} ms")
    print(f"      COMMIT of {statistics.median(commits):.0f} atomic blocks {statistics.median(commit_ms):.1f} ms "
          "(each waits for the WAL flush)")
    print(f"      inside the provider     {statistics.median(provider):.2f} ms")
    # Per task, then the median: what is left of an iteration's wall time besides SQL, COMMIT and the provider.
    python_ms = [w - d - c - p for w, d, c, p in zip(wall, db, commit_ms, provider, strict=True)]
    print(f"      Python (rest)           {statistics.median(python_ms):.1f} ms")
    print(f"      CPU time of the process {statistics.median(cpu_ms):.1f} ms (hardly moves with the host's load)")
    print(f"    Celery hop (task end -> next task start) p50 {harness.percentile(hop, 50):.1f} ms")
    print(f"  a continuing iteration: {statistics.fmean(t['queries'] for t in continuing):.2f} statements, "
          f"{statistics.fmean(t.get('commits', 0) for t in continuing):.2f} commits (mean; the first included)")
    print(f"  queries per iteration: {statistics.fmean(queries):.1f} mean; per session outside iterations: "
          f"{per_session_queries}")
    print(f"  machine: {harness.machine()}")
    figures = {
        "benchmark": "iteration_overhead",
        "pool": args.pool,
        "p50_ms": round(o["p50"], 2),
        "p95_ms": round(o["p95"], 2),
        "queries_per_iteration": round(statistics.fmean(queries), 1),
        "statements_per_iteration": round(statistics.fmean(queries), 2),  # mean: an execution's last one included
        "statements_continuing": round(statistics.fmean(t["queries"] for t in continuing), 2),
        "commits_continuing": round(statistics.fmean(t.get("commits", 0) for t in continuing), 2),
        "commits_per_iteration": round(statistics.fmean(commits), 2),
        "python_ms_p50": round(statistics.median(python_ms), 2),
        "samples": o["n"],
        "task_wall_p50_ms": round(statistics.median(wall), 2),
        "task_sql_p50_ms": round(statistics.median(db), 2),
        "task_commit_p50_ms": round(statistics.median(commit_ms), 2),
        "task_cpu_p50_ms": round(statistics.median(cpu_ms), 2),
        "hop_p50_ms": round(harness.percentile(hop, 50), 2),
        "machine": harness.machine(),
    }
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
