"""Intake: how an alert becomes a session, or joins one. `alerts` is the one entry point (REST, webhooks, checks,
evals); `deliveries` takes a webhook's batch of firing and resolved alerts (tarsy.intake maps the payloads)."""
