# Sub-agents: the execution that dispatched one, its task, depth and deadline; parked and queued statuses.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tarsy', '0023_silences_checks'),
    ]

    operations = [
        migrations.AddField(
            model_name='agentexecution',
            name='deadline_at',
            field=models.DateTimeField(blank=True, help_text='A sub-agent still running then times out', null=True),
        ),
        migrations.AddField(
            model_name='agentexecution',
            name='delivered_in_iteration',
            field=models.IntegerField(blank=True, help_text="The parent's iteration that was given this sub-agent's result", null=True),
        ),
        migrations.AddField(
            model_name='agentexecution',
            name='depth',
            field=models.PositiveSmallIntegerField(default=0, help_text="0: a stage's agent; a sub-agent: its parent's + 1"),
        ),
        migrations.AddField(
            model_name='agentexecution',
            name='parent_execution',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='sub_agents', to='tarsy.agentexecution'),
        ),
        migrations.AddField(
            model_name='agentexecution',
            name='task',
            field=models.TextField(blank=True, default='', help_text='What the orchestrator asked the sub-agent (masked)'),
        ),
        migrations.AlterField(
            model_name='agentexecution',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('active', 'Active'), ('waiting', 'Waiting'), ('queued', 'Queued'), ('completed', 'Completed'), ('failed', 'Failed'), ('timed_out', 'Timed Out'), ('cancelled', 'Cancelled')], default='pending', max_length=20),
        ),
        migrations.AlterField(
            model_name='stage',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('active', 'Active'), ('waiting', 'Waiting'), ('queued', 'Queued'), ('completed', 'Completed'), ('failed', 'Failed'), ('timed_out', 'Timed Out'), ('cancelled', 'Cancelled')], default='pending', max_length=20),
        ),
    ]
