"""`manage.py create_api_token NAME`: an API token for `system.auth.mode: token` clients."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Create (or show) the API token of a named API client."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name: str, **options):
        user, _ = get_user_model().objects.get_or_create(username=name, defaults={"is_active": True})
        token, created = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
        if not created:
            self.stderr.write(f"(existing token of {name})")
