"""Session search against one 1 MB alert through a real web server: what a long or adversarial term costs, and
whether an ordinary request still answers while twelve such searches run at once.

    python -m tests.bench.search_load [--parallel 12]

Figures: each search's status and time (a 4,000-character term is refused with 400; a 200-character term
that nearly matches everywhere is the worst a client can ask for), and /health's time alone and during the
parallel searches (each request on its own connection).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from tests.bench import harness

NEAR_MISS = "a" * 199 + "b"  # matches at every position of the alert's first half up to its last character


def _timed(client, path: str, params: dict | None = None) -> tuple[int, float]:
    started = time.perf_counter()
    status = client.get(path, params=params).status_code
    return status, round((time.perf_counter() - started) * 1000, 1)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", type=int, default=12)
    args = parser.parse_args(argv)
    bench = harness.bootstrap("search_load", tarsy={"agents": harness.BASE_AGENTS}, providers={})
    from tarsy.models import AlertSession

    words = " ".join(f"w{n}" for n in range(60_000))
    AlertSession.objects.create(alert_data=("a" * 500_000 + words)[:1_000_000], alert_type="kubernetes",
                                chain_id="kubernetes", status="completed")
    _, base = bench.start_server()
    import httpx

    figures: dict = {"alert_bytes": 1_000_000}
    with httpx.Client(base_url=base, timeout=120) as client:
        for name, term in {"term_4000": "a" * 3999 + "b", "term_200_near_miss": NEAR_MISS,
                           "term_200_words": " ".join(words.split()[:40])[:200]}.items():
            _timed(client, "/api/v1/sessions", {"search": term})
            status, ms = _timed(client, "/api/v1/sessions", {"search": term})
            figures[name] = {"status": status, "ms": ms}
            print(f"[search_load] {name}: {status} in {ms} ms", flush=True)
        figures["health_alone_ms"] = statistics.median(_timed(client, "/health")[1] for _ in range(5))
    results: list[tuple[int, float]] = []

    def search() -> None:
        with httpx.Client(base_url=base, timeout=120) as own:
            results.append(_timed(own, "/api/v1/sessions", {"search": NEAR_MISS}))

    threads = [threading.Thread(target=search) for _ in range(args.parallel)]
    for thread in threads:
        thread.start()
    time.sleep(0.05)
    with httpx.Client(base_url=base, timeout=120) as client:
        health = [_timed(client, "/health")[1] for _ in range(3)]
    for thread in threads:
        thread.join()
    figures["parallel"] = {"searches": args.parallel, "statuses": sorted({s for s, _ in results}),
                           "search_ms_max": max(ms for _, ms in results), "health_during_ms": health}
    print(f"[search_load] {args.parallel} parallel: searches up to {figures['parallel']['search_ms_max']} ms, "
          f"/health {health} ms", flush=True)
    figures["machine"] = harness.machine()
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
