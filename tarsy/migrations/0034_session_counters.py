"""A session's counters (event numbers, evidence ids, token and cost totals, last call time) move from the session
row to a row of their own (`SessionCounters`): every existing session gets one with its values, then the
session's columns go. Reversed, the columns come back and take the values of the counters rows."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery

BATCH = 2000  # sessions read and counters rows inserted per round trip
MOVED = ("input_tokens", "output_tokens", "thinking_tokens", "total_tokens", "cached_tokens", "cost_usd",
         "unpriced_calls", "event_seq", "evidence_count", "last_interaction_at")


def counters_from_sessions(apps, schema_editor):
    AlertSession = apps.get_model("tarsy", "AlertSession")
    SessionCounters = apps.get_model("tarsy", "SessionCounters")
    batch = []
    for values in AlertSession.objects.values("id", *MOVED).iterator(chunk_size=BATCH):
        batch.append(SessionCounters(session_id=values.pop("id"), **values))
        if len(batch) == BATCH:
            SessionCounters.objects.bulk_create(batch)
            batch = []
    SessionCounters.objects.bulk_create(batch)


def sessions_from_counters(apps, schema_editor):
    AlertSession = apps.get_model("tarsy", "AlertSession")
    SessionCounters = apps.get_model("tarsy", "SessionCounters")
    row = SessionCounters.objects.filter(session_id=OuterRef("id"))
    counted = AlertSession.objects.filter(counters__isnull=False)  # the others keep the columns' defaults
    counted.update(**{name: Subquery(row.values(name)[:1]) for name in MOVED})


class Migration(migrations.Migration):

    dependencies = [
        ('tarsy', '0033_pseudonyms'),
    ]

    operations = [
        migrations.CreateModel(
            name='SessionCounters',
            fields=[
                ('input_tokens', models.BigIntegerField(default=0)),
                ('output_tokens', models.BigIntegerField(default=0)),
                ('thinking_tokens', models.BigIntegerField(default=0)),
                ('total_tokens', models.BigIntegerField(default=0)),
                ('cached_tokens', models.BigIntegerField(default=0)),
                ('cost_usd', models.DecimalField(decimal_places=10, default=0, help_text='Estimated USD of the priced calls', max_digits=20)),
                ('unpriced_calls', models.IntegerField(default=0, help_text='Calls whose model has no price: cost_usd is a floor')),
                ('session', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='counters', serialize=False, to='tarsy.alertsession')),
                ('event_seq', models.PositiveBigIntegerField(default=0, help_text='The last `Event.seq` given on its channel (services.events.events_number)')),
                ('evidence_count', models.IntegerField(default=0, help_text="Evidence ids issued so far: the last tool result's E<n> (agents.citations)")),
                ('last_interaction_at', models.DateTimeField(blank=True, help_text='When its last LLM or MCP call ended', null=True)),
            ],
            options={
                'verbose_name_plural': 'session counters',
            },
        ),
        migrations.RunPython(counters_from_sessions, sessions_from_counters),
        migrations.RemoveField(
            model_name='alertsession',
            name='cached_tokens',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='cost_usd',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='event_seq',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='evidence_count',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='input_tokens',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='last_interaction_at',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='output_tokens',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='thinking_tokens',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='total_tokens',
        ),
        migrations.RemoveField(
            model_name='alertsession',
            name='unpriced_calls',
        ),
    ]
