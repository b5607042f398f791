"""`manage.py replay SESSION_ID`: re-run a finished investigation from its recordings and compare timelines."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agents.config import ConfigError
from evals.fixtures import ScenarioError
from evals.replay import prepare_replay, replay
from tarsy.errors import ServiceError


class Command(BaseCommand):
    help = ("Replay a finished session with its recorded LLM answers and tool outputs as a new session, and report "
            "whether the new timeline matches the old one event by event. Exit status 1 on any difference.")

    def add_arguments(self, parser):
        parser.add_argument("session_id")
        parser.add_argument("--config-dir", metavar="DIR",
                            help="where to write the replay's scenario and configuration "
                                 "(default: DATA_DIR/evals/replay-<session>)")
        parser.add_argument("--no-worker", action="store_true",
                            help="run no worker in this process: an external worker started with "
                                 "TARSY_CONFIG_DIR=<config dir> runs the replay")

    def handle(self, *args, session_id, config_dir, no_worker, **options):
        directory = Path(config_dir) if config_dir else settings.DATA_DIR / "evals" / f"replay-{session_id[:8]}"
        if options["verbosity"] < 2:  # the comparison says what matters; -v 2 shows the pipeline
            logging.getLogger("tarsy").setLevel(logging.WARNING)
        try:
            plan, notes = prepare_replay(session_id, directory, base_dir=settings.TARSY_CONFIG_DIR or None)
            if no_worker:
                self.stderr.write(f"Waiting for a worker started with TARSY_CONFIG_DIR={plan.config_dir}")
            comparison = replay(session_id, plan, worker=not no_worker)
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        except (ScenarioError, ConfigError) as exc:
            raise CommandError("\n".join(exc.problems)) from exc
        for note in notes:
            self.stderr.write(f"note: {note}")
        head = f"Replayed session {comparison.original} as {comparison.replay}"
        if comparison.identical:
            self.stdout.write(f"{head}: the timeline matches ({comparison.events} events).")
            return
        self.stdout.write(f"{head}: {len(comparison.differences)} difference(s):")
        for difference in comparison.differences:
            self.stdout.write(f"  - {difference}")
        raise CommandError("the replay does not match the original timeline")
