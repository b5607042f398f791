"""Sessions get a `title` (which alert this is); existing sessions are titled from their stored alert data. A
score records when its latest attempt failed (`failed_at`), apart from when the score it keeps was given.

The backfill derives titles as intake does without a chain's `title_template`: a migration must not depend on
the configuration directory of the host that runs it."""

from django.db import migrations, models

BATCH = 500  # sessions read (with their alert data) and updated per round trip


def title_existing_sessions(apps, schema_editor):
    from tarsy.intake.titles import alert_title

    AlertSession = apps.get_model("tarsy", "AlertSession")
    batch = []
    for session in AlertSession.objects.only("id", "alert_data").iterator(chunk_size=BATCH):
        session.title = alert_title(session.alert_data)
        batch.append(session)
        if len(batch) == BATCH:
            AlertSession.objects.bulk_update(batch, ["title"])
            batch = []
    AlertSession.objects.bulk_update(batch, ["title"])


class Migration(migrations.Migration):

    dependencies = [
        ("tarsy", "0012_citations"),
    ]

    operations = [
        migrations.AddField(
            model_name="alertsession",
            name="title",
            field=models.CharField(blank=True, db_index=True, default="",
                                   help_text="Which alert this is, in one line (tarsy.intake.titles)", max_length=255),
        ),
        migrations.RunPython(title_existing_sessions, migrations.RunPython.noop, elidable=True),
        migrations.AddField(
            model_name="sessionscore",
            name="failed_at",
            field=models.DateTimeField(blank=True, null=True,
                                       help_text="When the latest attempt failed (`error`); a score kept is older"),
        ),
        migrations.AlterField(
            model_name="sessionscore",
            name="scored_at",
            field=models.DateTimeField(blank=True, help_text="When `score` was given", null=True),
        ),
    ]
