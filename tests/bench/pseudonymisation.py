"""What pseudonymisation costs per LLM call, side by side with it off, on PostgreSQL.

One investigation's conversation grows as a real one does: the alert, then per iteration a tool call and its
result (a kubectl-style pod list of 10 pods, ~7 KB of JSON, new pod names and IPs each time). Each iteration's
request goes through `recorded_call` (the one path of every LLM call) to a zero-latency scripted provider twice,
pseudonymisation off and on, alternating; the mapping lives in the benchmark database (tarsy.services.pseudonyms).
Figures: time per call (median over repeats) and SQL statements per call, at the first and the last iteration.

    python -m tests.bench.pseudonymisation [--iterations 20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from tests.bench import harness

REPLY = "The pods <pod:1> and <pod:2> in <ns:1> restart on <node:1>; see <ip:1>."


def _pods(iteration: int) -> str:
    items = [{"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": f"checkout-{iteration:02d}{i}-7d9f", "namespace": "shop-prod", "labels": {"app": "checkout"},
        "ownerReferences": [{"kind": "ReplicaSet", "name": f"checkout-{iteration:02d}", "uid": f"u{i}"}]},
        "spec": {"nodeName": f"ip-10-0-{iteration}-{i}.ec2.internal", "containers": [{"name": "app", "image": "x:1"}]},
        "status": {"phase": "Running", "hostIP": f"10.0.{iteration}.{i}", "podIP": f"10.244.{iteration}.{i}",
                   "conditions": [{"type": "Ready", "status": "True"}] * 3}} for i in range(10)]
    return json.dumps({"kind": "PodList", "items": items}, indent=1)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5, help="calls per iteration and mode (median kept)")
    args = parser.parse_args(argv)
    bench = harness.bootstrap("pseudonymisation", tarsy={}, providers={})
    from django.db import connection

    from agents.config.schema import LLMProviderConfig, PrivacyConfig
    from agents.llm.recorded import recorded_call
    from agents.llm.registry import LLMTarget
    from agents.llm.types import ConversationMessage, LLMRequest, ToolCall
    from agents.privacy import policy
    from agents.prompts.fence import untrusted
    from tarsy.services.intake.alerts import session_submit

    policy.configure(PrivacyConfig())
    targets = {on: LLMTarget.of(f"cloud-{on}", LLMProviderConfig(type="scripted", script=[{"text": REPLY}],
                                                                   pseudonymise=on)) for on in (False, True)}
    alert = json.dumps({"alertname": "PodCrashLooping", "namespace": "shop-prod", "pod": "checkout-001-7d9f",
                        "cluster": "eu-prod-1", "instance": "10.0.0.9:9100"})
    session = session_submit(data=alert, alert_type="kubernetes")
    messages = [ConversationMessage(role="system", content="You investigate alerts. " * 40),
                ConversationMessage(role="user", content=untrusted(alert, what="the alert").text)]
    statements = 0

    def count(execute, sql, params, many, context):  # noqa: ANN001 - Django's execute_wrapper signature
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    rows = []
    for iteration in range(1, args.iterations + 1):
        messages.append(ConversationMessage(role="assistant", tool_calls=[ToolCall(
            id=f"c{iteration}", name="k8s.pods_list_in_namespace", arguments={"namespace": "shop-prod"})]))
        messages.append(ConversationMessage(role="tool", tool_call_id=f"c{iteration}", content=untrusted(
            _pods(iteration), what="the result of k8s.pods_list_in_namespace").text))
        request = LLMRequest(messages=list(messages), provider=targets[False].config, session_id=str(session.id),
                             iteration=1)
        times: dict[bool, list[float]] = {False: [], True: []}
        queries: dict[bool, int] = {}
        for _ in range(args.repeats):
            for on in (False, True):
                statements = 0
                with connection.execute_wrapper(count):
                    start = time.perf_counter()
                    call = recorded_call(request, targets[on], record=lambda record: None)
                    times[on].append((time.perf_counter() - start) * 1000)
                assert call.succeeded, call.error
                queries[on] = statements  # the later repeats: the mapping already holds this iteration's names
        chars = sum(len(m.content) for m in messages)
        row = {"iteration": iteration, "chars": chars, "off_ms": round(statistics.median(times[False]), 2),
               "on_ms": round(statistics.median(times[True]), 2), "on_statements": queries[True]}
        rows.append(row)
        print(f"iteration {iteration:3d}  {chars:7d} chars  off {row['off_ms']:7.2f} ms  on {row['on_ms']:7.2f} ms  "
              f"(+{row['on_ms'] - row['off_ms']:6.2f} ms, {queries[True]} SQL statements)", flush=True)
    from tarsy.models import Pseudonym

    first, last = rows[0], rows[-1]
    result = {
        "benchmark": "pseudonymisation", "iterations": args.iterations, "repeats": args.repeats,
        "first": first, "last": last,
        "added_ms_mean": round(statistics.fmean(r["on_ms"] - r["off_ms"] for r in rows), 2),
        "identifiers_mapped": Pseudonym.objects.filter(session=session).count(),
        "machine": harness.machine(),
    }
    print(f"  database {bench.db_name}")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
