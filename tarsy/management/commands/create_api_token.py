"""`manage.py create_api_token NAME [--rotate]`: an API token for `system.auth.mode: token` clients."""

from django.core.management.base import BaseCommand, CommandError

from tarsy.errors import Conflict
from tarsy.services.api_tokens import api_token_create


class Command(BaseCommand):
    help = ("Create the API token of a named API client and print it. It is shown only now: TARSy keeps its "
            "SHA-256 digest, not the token.")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--rotate", action="store_true",
                            help="replace the client's existing token (the old one stops working)")

    def handle(self, *args, name: str, rotate: bool, **options):
        try:
            token = api_token_create(name=name, replace=rotate)
        except Conflict as exc:
            raise CommandError(f"{exc.message}: {exc.detail} (--rotate)") from exc
        self.stdout.write(token)
        self.stderr.write(f"API token of {name!r}: store it now, it cannot be shown again.")
