"""Slack: a session's message and thread (outbound, from Celery tasks) and questions asked from the thread
(inbound, signed requests). Receivers of the lifecycle signals record what Slack should show; delivery
happens after the commit, in a task, so a Slack outage never touches an investigation."""
