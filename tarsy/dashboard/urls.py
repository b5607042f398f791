from pathlib import Path

from django.urls import path, re_path
from django.views.static import serve

from . import actions, checks, memories, quality, triage, views

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

urlpatterns = [
    path("", views.sessions_page, name="dashboard-sessions"),
    path("sessions/<uuid:session_id>", views.session_page, name="dashboard-session"),
    path("sessions/<uuid:session_id>/trace", views.trace_page, name="dashboard-trace"),
    path("sessions/<uuid:session_id>/fragments/<slug:name>", views.session_fragment, name="dashboard-fragment"),
    path("sessions/<uuid:session_id>/stages/<int:stage_id>", views.stage_fragment, name="dashboard-stage"),
    path("sessions/<uuid:session_id>/events", views.events_fragment, name="dashboard-events"),
    path("quality", quality.quality_page, name="dashboard-quality"),
    path("memories", memories.memories_page, name="dashboard-memories"),
    path("checks", checks.checks_page, name="dashboard-checks"),
    path("triage", triage.triage_page, name="dashboard-triage"),
    path("actions", actions.actions_page, name="dashboard-actions"),
    path("submit", views.submit_page, name="dashboard-submit"),
    path("system", views.system_page, name="dashboard-system"),
    path("system/mcp-servers", views.system_mcp_fragment, name="dashboard-mcp"),
    # Our own few files, served by Django so `make run` needs no collectstatic or separate file server.
    re_path(r"^static/(?P<path>tarsy/.+)$", serve, {"document_root": STATIC_DIR}),
]
