"""The decisions of orchestration: given the state after a step, what happens next.

Dispatch, an iteration's guard and what follows it, a stage's join and the next stage, a session's end, the
sweeper and retention. Writes go through tarsy.services; work that becomes a Celery task is a decision value
(tarsy/decisions.py) handed to `enact_on_commit`. Nothing here imports tarsy.tasks (docs/architecture.md).
"""
