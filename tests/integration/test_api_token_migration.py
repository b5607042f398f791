"""Migration 0002: API tokens stored in plaintext by an earlier release become digests and keep working."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder
from rest_framework.test import APIClient

from tarsy.models import APIToken
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

LEGACY_KEY = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"  # the 40-hex-digit form the earlier release issued
LEGACY_TABLE_SQL = ('CREATE TABLE authtoken_token ("key" varchar(40) PRIMARY KEY, '
                    '"created" timestamp with time zone NOT NULL, '
                    '"user_id" integer NOT NULL UNIQUE REFERENCES auth_user ("id"))')


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(targets if targets is not None else executor.loader.graph.leaf_nodes())


def test_plaintext_tokens_become_digests_and_their_table_is_dropped(tmp_path):
    user = get_user_model().objects.create_user("legacy-client")
    created = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    _migrate([("tarsy", "0001_initial")])
    try:
        with connection.cursor() as cursor:
            cursor.execute(LEGACY_TABLE_SQL)
            cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, %s)", [LEGACY_KEY, created, user.id])
        MigrationRecorder(connection).record_applied("authtoken", "0001_initial")
    finally:
        _migrate(None)

    assert "authtoken_token" not in connection.introspection.table_names()
    assert not MigrationRecorder(connection).migration_qs.filter(app="authtoken").exists()
    row = APIToken.objects.get(user=user)
    assert row.digest == hashlib.sha256(LEGACY_KEY.encode()).hexdigest() and row.created_at == created
    write_config(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": "token"}}})
    client = APIClient(REMOTE_ADDR="10.0.0.8", HTTP_AUTHORIZATION=f"Token {LEGACY_KEY}")
    assert client.get("/api/v1/sessions").status_code == 200
