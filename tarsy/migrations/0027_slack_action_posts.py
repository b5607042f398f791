# Slack: action proposals in a thread, edited in place once decided (a reply's `ref` and `edited_at`).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tarsy', '0026_action_dry_run'),
    ]

    operations = [
        migrations.AddField(
            model_name='slackpost',
            name='edited_at',
            field=models.DateTimeField(blank=True, help_text='Edited since Slack last showed it', null=True),
        ),
        migrations.AddField(
            model_name='slackpost',
            name='ref',
            field=models.CharField(blank=True, default='', help_text='What the reply shows, when it is edited in place later (`action:<id>`)', max_length=64),
        ),
        migrations.AlterField(
            model_name='slackpost',
            name='kind',
            field=models.CharField(choices=[('summary', 'Summary'), ('occurrence', 'Occurrence'), ('related', 'Related'), ('resolved', 'Resolved'), ('answer', 'Answer'), ('notice', 'Notice'), ('triage', 'Triage'), ('action', 'Action')], max_length=16),
        ),
        migrations.AddConstraint(
            model_name='slackpost',
            constraint=models.UniqueConstraint(condition=models.Q(('ref', ''), _negated=True), fields=('thread', 'ref'), name='slack_post_unique_ref'),
        ),
    ]
