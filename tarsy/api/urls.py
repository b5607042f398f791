from django.urls import path

from tarsy.slack import views as slack_views

from . import (
    action_views,
    memory_views,
    quality_views,
    session_views,
    silence_views,
    triage_views,
    views,
    webhook_views,
)

S = "sessions/<uuid:session_id>"

urlpatterns = [
    path("alerts", views.AlertSubmitView.as_view(), name="alert-submit"),
    path("alerts/alertmanager", webhook_views.AlertmanagerWebhookView.as_view(), name="alert-webhook-alertmanager"),
    path("alerts/grafana", webhook_views.GrafanaWebhookView.as_view(), name="alert-webhook-grafana"),
    path("alerts/pagerduty", webhook_views.PagerDutyWebhookView.as_view(), name="alert-webhook-pagerduty"),
    path("alert-types", views.AlertTypesView.as_view(), name="alert-types"),
    path("sessions", session_views.SessionListView.as_view(), name="session-list"),
    path("sessions/active", session_views.SessionActiveView.as_view(), name="session-active"),
    path("sessions/triage", triage_views.SessionTriageBulkView.as_view(), name="session-triage-bulk"),
    path("sessions/filter-options", session_views.SessionFilterOptionsView.as_view(), name="session-filter-options"),
    path(S, session_views.SessionDetailView.as_view(), name="session-detail"),
    path(f"{S}/timeline", session_views.SessionTimelineView.as_view(), name="session-timeline"),
    path(f"{S}/interactions", session_views.SessionInteractionsView.as_view(), name="session-interactions"),
    path(f"{S}/summary", session_views.SessionSummaryView.as_view(), name="session-summary"),
    path(f"{S}/cancel", session_views.SessionCancelView.as_view(), name="session-cancel"),
    path(f"{S}/score", quality_views.SessionScoreView.as_view(), name="session-score"),
    path(f"{S}/review", quality_views.SessionReviewView.as_view(), name="session-review"),
    path(f"{S}/triage", triage_views.SessionTriageView.as_view(), name="session-triage"),
    path("quality", quality_views.QualityView.as_view(), name="quality"),
    path(f"{S}/chat/messages", session_views.ChatMessagesView.as_view(), name="session-chat-messages"),
    path("actions", action_views.ActionListView.as_view(), name="action-list"),
    path("actions/<uuid:action_id>", action_views.ActionDetailView.as_view(), name="action-detail"),
    path("actions/<uuid:action_id>/approve", action_views.ActionApproveView.as_view(), name="action-approve"),
    path("actions/<uuid:action_id>/reject", action_views.ActionRejectView.as_view(), name="action-reject"),
    path("memories", memory_views.MemoryListView.as_view(), name="memory-list"),
    path("memories/<int:memory_id>", memory_views.MemoryDetailView.as_view(), name="memory-detail"),
    path("memories/<int:memory_id>/retire", memory_views.MemoryRetireView.as_view(), name="memory-retire"),
    path("memories/<int:memory_id>/reactivate", memory_views.MemoryReactivateView.as_view(),
         name="memory-reactivate"),
    path("silences", silence_views.SilenceListView.as_view(), name="silence-list"),
    path("silences/<int:silence_id>", silence_views.SilenceDetailView.as_view(), name="silence-detail"),
    path("checks", silence_views.CheckListView.as_view(), name="check-list"),
    path("checks/<str:name>/run", silence_views.CheckRunView.as_view(), name="check-run"),
    path("spend", views.SpendView.as_view(), name="spend"),
    path("system/warnings", views.SystemWarningsView.as_view(), name="system-warnings"),
    path("system/mcp-servers", views.MCPServersView.as_view(), name="system-mcp-servers"),
    # Signed by Slack (not the API's auth mode): see tarsy/slack/views.py.
    path("slack/events", slack_views.events, name="slack-events"),
    path("slack/commands", slack_views.commands, name="slack-commands"),
    path("slack/interactions", slack_views.interactions, name="slack-interactions"),
    # Anything else under /api/ (a malformed session id included) is a JSON 404: see tarsy/urls.py.
]
