"""`manage.py serve_metrics [--port N]`: web's metrics on a port Prometheus can reach.

Web listens on loopback behind its auth proxy, so its /metrics is out of a cluster scraper's reach. This
command runs beside it (a container of the same pod, sharing PROMETHEUS_MULTIPROC_DIR) and serves the same text:
the web processes' counters and the database-backed session gauges. One scrape at a time is plenty.
"""

from __future__ import annotations

import os
from wsgiref.simple_server import WSGIRequestHandler, make_server

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from tarsy.metrics import METRICS_PORT_ENV, render

DEFAULT_PORT = 9500


def metrics_app(environ, start_response):
    if environ.get("PATH_INFO") != "/metrics":
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"Not found: metrics are at /metrics\n"]
    try:
        body, content_type = render()
    finally:
        close_old_connections()
    start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # a scrape every 15 s is not news
        pass


class Command(BaseCommand):
    help = "Serve web's Prometheus metrics (process counters and session gauges) on --port (TARSY_METRICS_PORT)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get(METRICS_PORT_ENV) or DEFAULT_PORT))
        parser.add_argument("--addr", default=os.environ.get("TARSY_METRICS_ADDR", "0.0.0.0"))

    def handle(self, *args, port: int, addr: str, **options):
        with make_server(addr, port, metrics_app, handler_class=_QuietHandler) as server:
            self.stdout.write(f"metrics on http://{addr}:{port}/metrics")
            server.serve_forever()
