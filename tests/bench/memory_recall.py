"""Memory recall quality on PostgreSQL: does the right memory reach the first prompt, and does a look-alike beat it?

Fills the benchmark database with labelled memories — every (service, cause) pair of a small catalogue, so each
service has memories of several causes that read alike (same service, namespace and vocabulary) — and asks
queries written the way a new alert would put a known problem: other words, the service named, no scope labels
(the ranking alone must pick among all memories). Per query: recall@5 (the memory of the query's cause and
service is among the 5 recalled) and whether a distractor (same service, another cause) is ranked first.

`--memories N` adds look-alike filler up to N memories of the same alert type (the same causes told of
numbered services: `checkout-17`), the worst case for scale, and times the real paths at that size: recall
(`tarsy.pipeline.memory.recall.recall`, embedding call included) per query, and learning
(`tarsy.services.memories.memory_learn`, half new memories, half confirmations, with the quota set to N so each
new one also retires the oldest) per reflection. Latencies are in ms; the JSON's last line holds their p50/p95.

    python -m tests.bench.memory_recall [--mode hybrid|keyword] [--services 25] [--queries 60] [--memories 20000]

`hybrid` embeds with the fake OpenAI server's deterministic embedding (tests/fakes/embedding.py, a stand-in
model with a small fixed concept list): it measures the pipeline — fusion, floor, decay, cap — not a real
model. `keyword` is what a deployment without an embedding provider gets.
"""

from __future__ import annotations

import argparse
import random
import time

from tests.bench import harness

SERVICES = ["checkout", "payments", "cart", "search", "auth", "inventory", "shipping", "billing", "catalog",
            "orders", "profile", "notifications", "recommendations", "reviews", "gateway", "ledger", "pricing",
            "media", "chat", "reports", "scheduler", "exporter", "importer", "audit", "sessions"]
# cause: (what a memory says, how a new alert puts it)
CAUSES = {
    "oom": ("{s} pods are OOMKilled because the memory limit of 512Mi is too low for the {s} heap; raising the "
            "limit to 1Gi fixed it.",
            "{s} containers keep restarting: killed for exceeding memory, out of memory errors in {s}"),
    "configmap": ("{s} crash-loops when its config map {s}-config is missing; restoring {s}-config from git fixed "
                  "it.",
                  "{s} keeps restarting at startup, its configuration object cannot be found"),
    "db_pool": ("{s} errors come from the postgres connection pool running out; max_connections was reached and "
                "scaling pgbouncer for {s} fixed it.",
                "{s} requests fail: the database refuses new clients, too many connections"),
    "cert": ("{s} TLS certificate expired; renewing it with cert-manager fixed the {s} handshake errors.",
             "{s} x509 errors: the cert is no longer valid, handshakes with {s} fail"),
    "dns": ("{s} cannot resolve service names because coredns pods are overloaded; scaling coredns fixed it.",
            "{s} lookups time out, hosts cannot be resolved from {s} pods"),
    "disk": ("{s} node disk fills with logs because log rotation is off; cleaning /var/log and enabling rotation "
             "fixed it.",
             "{s} writes fail with no space left on device on the volume"),
    "image": ("{s} ImagePullBackOff: the registry pull secret expired; rotating the pull secret fixed {s}.",
              "{s} new pods cannot fetch their image: unauthorized from the registry"),
    "cpu": ("{s} latency rises because of CPU throttling: the CPU limit is too low; raising it fixed {s}.",
            "{s} responses are slow, the processor quota is throttled"),
}
PROBE = ("{s} pods are killed by a liveness probe whose timeout is too short during GC pauses; raising "
         "timeoutSeconds fixed it.")  # a ninth memory per service: a look-alike of both oom and restarts


def _corpus(services: list[str]) -> list[tuple[str, str, str]]:
    """(service, cause, text) for every labelled memory."""
    rows = [(s, cause, memory.format(s=s)) for s in services for cause, (memory, _) in CAUSES.items()]
    return rows + [(s, "probe", PROBE.format(s=s)) for s in services]


def _filler(count: int) -> list[tuple[str, str, str]]:
    """Look-alikes of the labelled memories: the same causes at numbered services (`checkout-17`)."""
    texts = [memory for memory, _ in CAUSES.values()] + [PROBE]
    services = [f"{SERVICES[i % len(SERVICES)]}-{i // len(SERVICES)}" for i in range(count)]
    return [(s, "filler", texts[(i // 7) % len(texts)].format(s=s)) for i, s in enumerate(services)]


EMBED_BATCH = 500  # texts per embedding request while filling


def _embed_all(texts: list[str], embed) -> list:
    if not embed:
        return [None] * len(texts)
    return [v for start in range(0, len(texts), EMBED_BATCH) for v in embed(texts[start:start + EMBED_BATCH])]


def _fill(rows: list[tuple[str, str, str]], embed) -> dict[tuple[str, str], int]:
    from django.utils import timezone

    from tarsy.models import Memory

    rng = random.Random(31)
    vectors = _embed_all([text for _, _, text in rows], embed)
    now = timezone.now()
    created = Memory.objects.bulk_create(batch_size=1000, objs=[Memory(
        kind="incident", text=text, alert_type="kubernetes", labels={"service": service},
        confidence=round(rng.uniform(0.45, 0.85), 2), confirmed_at=now - timezone.timedelta(days=rng.randint(0, 60)),
        embedding=vector, embedding_model="fake-embedding" if vector else "",
    ) for (service, _, text), vector in zip(rows, vectors, strict=True)])
    from django.db import connection

    with connection.cursor() as cursor:  # what autovacuum does after a bulk insert: planner statistics
        cursor.execute("ANALYZE tarsy_memory")
    return {(service, cause): m.id for (service, cause, _), m in zip(rows, created, strict=True)}


def _time_learning(embed, embedding_model: str, count: int) -> list[float]:
    """Milliseconds per `memory_learn` of one reflection's memory: even ones new, odd ones a repeat (a
    confirmation), each from its own finished session."""
    from django.utils import timezone

    from agents.memory.reflection import Candidate
    from tarsy.models import AlertSession
    from tarsy.services.memories import Learned, memory_learn

    timings = []
    for i in range(count):
        service = SERVICES[i % len(SERVICES)]
        text = (f"{service} batch job {i // 2} stalls because its queue consumer lost its lease; restarting the "
                f"consumer group fixed it.")
        [vector] = _embed_all([text], embed)
        session = AlertSession.objects.create(alert_data="{}", alert_type="kubernetes", chain_id="kubernetes",
                                              status="completed", completed_at=timezone.now())
        started = time.perf_counter()
        memory_learn(session_id=session.id, learned=[Learned(candidate=Candidate(kind="incident", text=text),
                                                             embedding=vector)],
                     alert_type="kubernetes", chain_id="kubernetes", alert_labels={"service": service},
                     embedding_model=embedding_model if vector else "")
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def _queries(services: list[str], count: int) -> list[tuple[str, str, str]]:
    pairs = [(s, c) for s in services for c in CAUSES]
    random.Random(7).shuffle(pairs)
    return [(s, c, CAUSES[c][1].format(s=s)) for s, c in pairs[:count]]


def _fake_embedding_server() -> tuple[harness.Child, str]:
    """The fake OpenAI server as a process of its own, as an embedding provider is: its work is not timed as
    TARSy's (in this process it would share the GIL with the recall being measured)."""
    import os
    import socket
    import tempfile
    from pathlib import Path

    from tests.support.processes import free_port

    port = free_port()
    child = harness.Child("fake-openai", [harness.PYTHON, "-m", "tests.fakes.fake_openai", "--port", str(port)],
                          dict(os.environ), Path(tempfile.mkdtemp(prefix="tarsy-bench-fake-")))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return child, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the fake embedding server did not listen:\n{child.log()[-2000:]}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["hybrid", "keyword"], default="hybrid")
    parser.add_argument("--services", type=int, default=len(SERVICES))
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--memories", type=int, default=0,
                        help="fill with look-alikes up to this many memories (default: the labelled ones only)")
    parser.add_argument("--learns", type=int, default=40, help="reflections timed (40: a p95 that is not the max)")
    args = parser.parse_args(argv)
    services = SERVICES[: args.services]
    fake = None
    providers: dict = {}
    memory: dict = {"enabled": True}
    if args.memories:
        memory["max_per_alert_type"] = args.memories
    if args.mode == "hybrid":
        fake = _fake_embedding_server()
        providers["embedder"] = {"type": "openai", "model": "fake-embedding", "base_url": fake[1]}
        memory["embedding_provider"] = "embedder"
    harness.bootstrap("memory_recall", tarsy={"agents": harness.BASE_AGENTS, "memory": memory}, providers=providers)

    from agents.llm.embeddings import embed_texts
    from tarsy.config import get_config
    from tarsy.pipeline.memory.recall import recall

    embed = None
    if fake is not None:
        config = get_config()
        embed = lambda texts: embed_texts("embedder", config.provider("embedder"), texts, session_id="")  # noqa: E731
    labelled = _corpus(services)
    rows = labelled + _filler(max(args.memories - len(labelled), 0))
    ids = _fill(rows, embed)
    queries = _queries(services, args.queries)
    found = distracted = 0
    recall_ms = []
    for service, cause, text in queries:
        started = time.perf_counter()
        hits, mode = recall(query=f"kubernetes\n{text}", alert_type="kubernetes", chain_id="kubernetes", labels={})
        recall_ms.append((time.perf_counter() - started) * 1000)
        top = [h.memory.id for h in hits]
        found += ids[(service, cause)] in top[:5]
        look_alikes = {ids[(service, other)] for other in [*CAUSES, "probe"] if other != cause}
        distracted += bool(top) and top[0] in look_alikes
    learn_ms = _time_learning(embed, "fake-embedding", args.learns)
    if fake is not None:
        fake[0].stop()
    recall_summary, learn_summary = harness.summary_ms(recall_ms), harness.summary_ms(learn_ms)
    figures = {"recall_at_5": round(found / len(queries), 3), "distractor_first_rate": round(distracted / len(queries),
                                                                                          3),
               "queries": len(queries), "mode": args.mode, "memories": len(rows),
               "recall_p50_ms": round(recall_summary["p50"], 1), "recall_p95_ms": round(recall_summary["p95"], 1),
               "learn_p50_ms": round(learn_summary["p50"], 1), "learn_p95_ms": round(learn_summary["p95"], 1),
               "learns": len(learn_ms), "machine": harness.machine()}
    print(f"[memory_recall] {args.mode}: recall@5 {figures['recall_at_5']}, distractor first "
          f"{figures['distractor_first_rate']} over {len(queries)} queries and {len(rows)} memories; recall p95 "
          f"{figures['recall_p95_ms']} ms, learn p95 {figures['learn_p95_ms']} ms", flush=True)
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
