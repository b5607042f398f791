"""`manage.py export_scenario SESSION_ID DIR`: turn a finished session into an eval scenario folder;
`manage.py export_scenario --reviewed inaccurate DIR`: one folder per session reviewed with that rating."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evals.capture import export_session
from evals.scenario import NAME_RE
from tarsy.errors import ServiceError
from tarsy.models import Rating
from tarsy.selectors.quality import reviews_with_rating


def candidate_name(alert_type: str, session_id) -> str:
    """A scenario folder name for a reviewed session: its alert type and the start of its id."""
    slug = re.sub(r"[^a-z0-9]+", "-", alert_type.lower()).strip("-")[:40] or "alert"
    return f"{slug}-{str(session_id)[:8]}"


class Command(BaseCommand):
    help = ("Write a scenario folder from a finished session: alert.yaml, tools.yaml (every tool output it saw, "
            "masked), reference.yaml (its recorded LLM answers) and a draft expect.yaml to edit. With --reviewed "
            "RATING, DIR is a parent folder and every session reviewed with that rating becomes a candidate in it.")

    def add_arguments(self, parser):
        parser.add_argument("session_id", nargs="?")
        parser.add_argument("directory", help="the scenario folder, e.g. evals/scenarios/payments-oom-2025-06-03 "
                                              "(with --reviewed: the folder the candidates go into)")
        parser.add_argument("--reviewed", choices=Rating.values,
                            help="export every session whose review has this rating (e.g. inaccurate)")

    def handle(self, *args, session_id, directory, reviewed, **options):
        if bool(session_id) == bool(reviewed):
            raise CommandError("give either a session id or --reviewed RATING")
        if reviewed:
            return self._export_reviewed(reviewed, Path(directory))
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

    def _export_reviewed(self, rating: str, parent: Path) -> None:
        """Re-runnable: a candidate already in the folder is left as it is (someone may be editing it)."""
        reviews = reviews_with_rating(rating)
        written = 0
        for review in reviews:
            target = parent / candidate_name(review.session.alert_type, review.session_id)
            if target.exists() and any(target.iterdir()):
                self.stderr.write(f"note: {target} exists; left as it is")
                continue
            try:
                notes = export_session(review.session_id, target, review=review)
            except ServiceError as exc:
                self.stderr.write(f"note: session {review.session_id} skipped: {exc.message}")
                continue
            for note in notes:
                self.stderr.write(f"note: {target.name}: {note}")
            self.stdout.write(f"Wrote {target} (reviewed {rating} by {review.author})")
            written += 1
        self.stdout.write(f"{written} of {len(reviews)} sessions reviewed {rating} exported to {parent}: edit each "
                          f"expect.yaml, then run `python manage.py eval --scenario {parent}`.")
