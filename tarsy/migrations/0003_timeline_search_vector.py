"""A stored, GIN-indexed full-text vector of each timeline event's content, for session search (API and
dashboard): a search reads the stored vectors — through the index for a rare word — instead of computing one per
event, which cost 2.5–3.6 s per search at 50,000 events whichever plan PostgreSQL chose.

Sessions keep no stored vector: PostgreSQL recomputes stored generated columns on every UPDATE of the row, and a
session row is updated on every iteration and heartbeat while its alert data may be up to 1 MB.

PostgreSQL only, and unknown to the Django model (it never reads or writes the column; PostgreSQL keeps it up to
date): embedded SQLite searches by substring (tarsy.selectors.filters.search_sessions).
"""

from django.db import migrations

COLUMN = "search_vector"
INDEX = "tarsy_timelineevent_search"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE tarsy_timelineevent ADD COLUMN {COLUMN} tsvector GENERATED ALWAYS AS "
                              "(to_tsvector('simple'::regconfig, COALESCE(content, ''))) STORED")
        schema_editor.execute(f"CREATE INDEX {INDEX} ON tarsy_timelineevent USING gin ({COLUMN})")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE tarsy_timelineevent DROP COLUMN {COLUMN}")


class Migration(migrations.Migration):
    dependencies = [("tarsy", "0002_api_tokens")]

    operations = [migrations.RunPython(create, drop)]
