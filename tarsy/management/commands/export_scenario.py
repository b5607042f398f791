"""`manage.py export_scenario SESSION_ID DIR`: turn a finished session into an eval scenario folder."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evals.capture import export_session
from evals.scenario import NAME_RE
from tarsy.services.errors import ServiceError


class Command(BaseCommand):
    help = ("Write a scenario folder from a finished session: alert.yaml, tools.yaml (every tool output it saw, "
            "masked), reference.yaml (its recorded LLM answers) and a draft expect.yaml to edit.")

    def add_arguments(self, parser):
        parser.add_argument("session_id")
        parser.add_argument("directory", help="the scenario folder, e.g. evals/scenarios/payments-oom-2025-06-03")

    def handle(self, *args, session_id, directory, **options):
        target = Path(directory)
        if not NAME_RE.match(target.name):
            raise CommandError(f"{target.name!r}: a scenario folder is named with lowercase letters, digits and dashes")
        if target.exists() and any(target.iterdir()):
            raise CommandError(f"{target} exists and is not empty")
        try:
            notes = export_session(session_id, target)
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        for note in notes:
            self.stderr.write(f"note: {note}")
        self.stdout.write(f"Wrote {target}: edit expect.yaml, then run `python manage.py eval --scenario {target}`.")
