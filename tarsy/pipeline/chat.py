"""Which sessions take follow-up questions (the chat itself: tarsy.services.chats)."""

from __future__ import annotations

from tarsy.config import get_config
from tarsy.models import AlertSession, SessionStatus

CHATTABLE_STATUSES = (SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.TIMED_OUT)


def chat_available(session: AlertSession) -> bool:
    """A finished (not cancelled) session of a chain with chat enabled."""
    config = get_config()
    chain = config.chains.get(session.chain_id)
    return bool(chain and chain.chat.enabled and session.status in CHATTABLE_STATUSES)
