"""What every dashboard page's template gets: who is signed in and the auth mode."""

from __future__ import annotations

from tarsy.config import get_config
from tarsy.identity import request_author


def page_context(request, **extra):
    return {"author": request_author(request), "auth_mode": get_config().system.auth.mode, **extra}
