"""`manage.py serve` names the database it really runs on."""

from __future__ import annotations

import io

import pytest
from django.db import connection

from tarsy.config import get_config
from tarsy.management.commands.serve import Command

pytestmark = [pytest.mark.django_db]


@pytest.mark.parametrize("embedded", [True, False])
def test_the_banner_names_the_database_in_use(settings, embedded):
    settings.EMBEDDED = embedded
    out = io.StringIO()
    Command(stdout=out)._print_banner("127.0.0.1", 8000, get_config(), run_worker=embedded)
    first = out.getvalue().splitlines()[0]
    assert connection.display_name in first
    other = "SQLite" if connection.vendor == "postgresql" else "PostgreSQL"
    assert other not in first
    assert ("embedded" if embedded else "production") in first
