"""Lifecycle signals: the hook points outside integrations (Slack, notifications) listen to.

Services send them inside their transaction; a receiver that talks to the outside world must defer its work
with `transaction.on_commit` (or enqueue a task) so a rollback never notifies and a slow receiver never holds
the row locks.
"""

from django.dispatch import Signal

# kwargs: session (AlertSession, fresh from the database). Sent on every status change, claim included.
session_status_changed = Signal()

# kwargs: session (the session the alert joined), data (the masked alert data of this occurrence, as text),
# kind ("occurrence" for a repeat of the same fingerprint, "related" for another alert of the same group).
alert_attached = Signal()

# kwargs: stage (Stage, as just written). Sent when a stage starts and when it closes (chat stages included).
stage_status_changed = Signal()

# kwargs: session (the session of the alert), text (what the source said, e.g. "Alert resolved in alertmanager at …"),
# related (True: a related alert of the session's group resolved, not its own). Sent when a monitoring source reports
# the alert behind a session as resolved.
alert_resolved = Signal()

# kwargs: session (AlertSession, as just written), action ("claim", "assign", "acknowledge", "resolve", "reopen"),
# actor (who acted), note (masked). Sent by every triage action (tarsy.services.triage), not by the automatic
# needs_review of a session that finishes (session_status_changed covers that).
triage_changed = Signal()

# kwargs: proposal (ActionProposal, as just written), transition ("proposed", "approved", "rejected", "expired",
# "withdrawn", "executed"). Sent with every transition's `action` timeline event (tarsy.services.actions).
action_changed = Signal()
