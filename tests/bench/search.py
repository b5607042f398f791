"""Session search on PostgreSQL: what one search costs the API and the dashboard, which share it.

Fills the benchmark database with sessions (each with timeline events), then times the shared filter's query
(first page) and the two endpoints that run it — GET /api/v1/sessions?search=… and the dashboard's history
fragment — through Django's test client in this process, for a rare word, a common one and an identifier.

    python -m tests.bench.search [--sessions 5000] [--events 10] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

from tests.bench import harness

TERMS = {"rare": "needle", "common": "probes", "identifier": "web-4321"}


def _fill(sessions: int, events: int) -> None:
    from tarsy.models import AlertSession, TimelineEvent

    rows = AlertSession.objects.bulk_create([AlertSession(
        alert_data=f"pod web-{i} CrashLoopBackOff in namespace prod-{i % 50}", alert_type="kubernetes",
        chain_id="kubernetes", status="completed", author=f"user{i % 7}",
        final_analysis=f"The config map app-config-{i} is missing; restart after recreating it. " * 3,
    ) for i in range(sessions)])
    TimelineEvent.objects.bulk_create([TimelineEvent(
        session=session, sequence_number=n, event_type="llm_thinking",
        content=f"Checking the pods and their events, step {n}, looking at restarts and probes " * 4,
    ) for session in rows for n in range(1, events + 1)], batch_size=5000)
    AlertSession.objects.filter(id=rows[len(rows) // 2].id).update(final_analysis="the needle")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _first_page(session_filter, sessions_list, term: str) -> list:
    return list(session_filter({"search": term}, queryset=sessions_list()).qs[:25])


def _median_ms(call, runs: int) -> float:
    call()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--events", type=int, default=10, help="timeline events per session")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per figure (median)")
    args = parser.parse_args(argv)
    harness.bootstrap("search", tarsy={"agents": harness.BASE_AGENTS}, providers={})
    _fill(args.sessions, args.events)

    from django.test import Client

    from tarsy.selectors.filters import SessionFilter
    from tarsy.selectors.sessions import sessions_list

    client = Client(REMOTE_ADDR="127.0.0.1", HTTP_HOST="127.0.0.1")
    figures: dict = {"sessions": args.sessions, "timeline_events": args.sessions * args.events}
    for name, term in TERMS.items():
        query = _median_ms(partial(_first_page, SessionFilter, sessions_list, term), args.runs)
        api = _median_ms(partial(client.get, f"/api/v1/sessions?search={term}"), args.runs)
        page = _median_ms(partial(client.get, f"/?search={term}&fragment=history"), args.runs)
        print(f"[search] {name} ({term!r}): query {query} ms, API {api} ms, dashboard {page} ms", flush=True)
        figures[name] = {"query_ms": query, "api_ms": api, "dashboard_ms": page}
    figures["machine"] = harness.machine()
    harness.emit(figures)
    return figures


if __name__ == "__main__":
    harness.run(main)
