# Approved actions: the proposals of action agents, their decision, execution and verification outcome.

import django.db.models.deletion
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tarsy', '0024_sub_agents'),
    ]

    operations = [
        migrations.AlterField(
            model_name='timelineevent',
            name='event_type',
            field=models.CharField(choices=[('llm_thinking', 'Llm Thinking'), ('llm_response', 'Llm Response'), ('llm_tool_call', 'Llm Tool Call'), ('mcp_tool_call', 'Mcp Tool Call'), ('mcp_tool_summary', 'Mcp Tool Summary'), ('tool_result', 'Tool Result'), ('error', 'Error'), ('user_question', 'User Question'), ('executive_summary', 'Executive Summary'), ('final_analysis', 'Final Analysis'), ('code_execution', 'Code Execution'), ('google_search_result', 'Google Search Result'), ('url_context_result', 'Url Context Result'), ('alert_resolved', 'Alert Resolved'), ('related_alerts', 'Related Alerts'), ('budget_reached', 'Budget Reached'), ('memory.recalled', 'Memory Recalled'), ('action', 'Action')], max_length=40),
        ),
        migrations.CreateModel(
            name='ActionProposal',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('iteration', models.IntegerField(help_text='The iteration that proposed it')),
                ('server', models.CharField(max_length=255)),
                ('tool', models.CharField(max_length=255)),
                ('arguments', models.JSONField(default=dict)),
                ('justification', models.TextField(help_text='Masked')),
                ('expected_effect', models.TextField(help_text='Masked')),
                ('verify_tool', models.CharField(help_text='server.tool: the read that checks the effect', max_length=511)),
                ('verify_arguments', models.JSONField(default=dict)),
                ('verify_expect', models.TextField(help_text='Text the verification read must show once the action worked')),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('approved', 'Approved'), ('executing', 'Executing'), ('executed', 'Executed'), ('rejected', 'Rejected'), ('expired', 'Expired')], default='pending', max_length=20)),
                ('expires_at', models.DateTimeField()),
                ('decided_by', models.CharField(blank=True, default='', max_length=255)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('comment', models.TextField(blank=True, default='', help_text='Masked')),
                ('executed_at', models.DateTimeField(blank=True, null=True)),
                ('outcome', models.CharField(blank=True, choices=[('verified', 'Verified'), ('not_verified', 'Not verified'), ('failed', 'Failed')], default='', max_length=20)),
                ('result', models.TextField(blank=True, default='', help_text="The action's masked result")),
                ('evidence', models.TextField(blank=True, default='', help_text="The verification's masked last read")),
                ('delivered_in_iteration', models.IntegerField(blank=True, help_text="The execution's iteration that was told the decision", null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('execution', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='action_proposals', to='tarsy.agentexecution')),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='action_proposals', to='tarsy.alertsession')),
            ],
            options={
                'ordering': ['created_at'],
                'indexes': [models.Index(fields=['status', 'expires_at'], name='action_status_expiry'), models.Index(fields=['execution', 'status'], name='action_execution_status')],
            },
        ),
    ]
