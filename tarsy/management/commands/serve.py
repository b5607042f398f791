"""`manage.py serve`: the whole of TARSy in one process (embedded default) or the web server alone."""

from __future__ import annotations

import asyncio
import os
import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from agents.config.builtins import DEMO_PACE_ENV
from tarsy.config import DEMO_CLUSTER_JOURNAL, DEMO_FEATURES_ENV, ConfigError, get_config
from tarsy.services.users import admin_user_create_first

# A demo step streams about as long as a real model's reply, so a newcomer watches the timeline, the tokens and
# the Running panel (an investigation of ~8 steps takes ~30 s); TARSY_DEMO_PACE_MS=0 turns it off.
SERVE_DEMO_PACE_MS = 3500


class Command(BaseCommand):
    help = "Serve TARSy: ASGI server, plus in-process worker and periodic jobs in embedded mode."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.TARSY_HOST)
        parser.add_argument("--port", type=int, default=settings.TARSY_PORT)
        parser.add_argument("--no-worker", action="store_true", help="do not run the in-process worker")

    def execute(self, *args, **options):
        """The demo's pace and extras are set before the system checks read the configuration; each start shows the
        demo cluster with its incidents (what approved actions changed is forgotten)."""
        os.environ.setdefault(DEMO_PACE_ENV, str(SERVE_DEMO_PACE_MS))
        os.environ.setdefault(DEMO_FEATURES_ENV, "1")
        if settings.EMBEDDED:
            (settings.DATA_DIR / DEMO_CLUSTER_JOURNAL).unlink(missing_ok=True)
        return super().execute(*args, **options)

    def handle(self, *args, host: str, port: int, no_worker: bool, **options):
        try:
            config = get_config()
        except ConfigError as exc:
            raise CommandError(str(exc)) from exc
        import uvicorn

        from tarsy.embedded import EmbeddedWorker, PeriodicJobs, bind_publisher_to_running_loop

        run_worker = settings.EMBEDDED and not no_worker
        self._print_banner(host, port, config, run_worker)
        worker = EmbeddedWorker() if run_worker else None
        periodic = PeriodicJobs() if run_worker else None
        server = uvicorn.Server(uvicorn.Config("tarsy.asgi:application", host=host, port=port, ws="websockets-sansio",
                                               lifespan="off", log_level="warning", timeout_graceful_shutdown=5,
                                               proxy_headers=False,  # auth checks the real peer (deploy/README)
                                               ws_per_message_deflate=False))  # deploy/README: why no deflate

        async def main() -> None:
            bind_publisher_to_running_loop()
            if worker is not None and periodic is not None:
                worker.start()
                periodic.start()
            await server.serve()

        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            pass
        finally:
            self.stdout.write("Stopping…")
            if periodic:
                periodic.stop()
            if worker:
                worker.stop()
            from agents.mcp.pool import shutdown_pool

            shutdown_pool()
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    def _print_banner(self, host: str, port: int, config, run_worker: bool) -> None:
        base = f"http://{host}:{port}"
        database = connection.display_name  # what it really runs on: embedded mode also takes a DATABASE_URL
        mode = f"embedded ({database}, in-process worker)" if settings.EMBEDDED else f"production ({database} + Redis)"
        lines = [
            f"TARSy is serving in {mode} mode",
            f"  Dashboard: {base}/",
            f"  API docs:  {base}/api/docs/",
            f"  Admin:     {base}/admin/",
            f"  LLM:       {config.default_provider}" + (
                f" (built-in demo investigator, {os.environ.get(DEMO_PACE_ENV) or 0} ms per step: {DEMO_PACE_ENV})"
                if config.default_provider == "demo" else ""),
        ]
        lines += self._admin_login()
        for warning in config.warnings():
            lines.append(f"  warning: {warning}")
        if not run_worker:
            lines.append("  worker:    not in this process (run `TARSY_WORKER_POOL=threads celery -A tarsy worker "
                         "-P threads -c 64`)")
        self.stdout.write("\n".join(lines))

    def _admin_login(self) -> list[str]:
        """First start: create `admin` with a random password, printed once."""
        password = admin_user_create_first()
        if password is None:
            return ["  Admin login: an admin user exists (reset: python manage.py changepassword admin)"]
        return [f"  Admin login: admin / {password}   (shown once; change: python manage.py changepassword admin)"]
