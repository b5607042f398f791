# API tokens kept as SHA-256 digests. Tokens of the earlier plaintext table (Django REST framework's authtoken,
# no longer installed) are carried over as digests, so they keep working, and that table is dropped.

import datetime
import hashlib

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

PLAINTEXT_TABLE = "authtoken_token"


def _aware(value):
    """SQLite hands back the naive UTC time Django stored."""
    return timezone.make_aware(value, datetime.UTC) if timezone.is_naive(value) else value


def hash_plaintext_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if PLAINTEXT_TABLE not in connection.introspection.table_names():
        return
    with connection.cursor() as cursor:  # standard SQL quoting: PostgreSQL and SQLite alike
        cursor.execute(f'SELECT "key", "user_id", "created" FROM "{PLAINTEXT_TABLE}"')
        rows = cursor.fetchall()
    APIToken = apps.get_model("tarsy", "APIToken")
    APIToken.objects.using(connection.alias).bulk_create([
        APIToken(user_id=user_id, digest=hashlib.sha256(key.encode()).hexdigest(), created_at=_aware(created))
        for key, user_id, created in rows
    ])
    schema_editor.execute(f'DROP TABLE "{PLAINTEXT_TABLE}"')
    MigrationRecorder(connection).migration_qs.filter(app="authtoken").delete()


class Migration(migrations.Migration):

    dependencies = [
        ('tarsy', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='APIToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('digest', models.CharField(max_length=64, unique=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='api_token', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'API token',
            },
        ),
        # Not reversible in substance: a digest cannot give back its token (reversing only removes the new table).
        migrations.RunPython(hash_plaintext_tokens, migrations.RunPython.noop),
    ]
