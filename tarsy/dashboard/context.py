"""What every dashboard page's template gets: who is signed in, the auth mode, the daily-spend banner."""

from __future__ import annotations

from tarsy.config import get_config
from tarsy.identity import request_author
from tarsy.pipeline.budget import daily_limit_warning


def page_context(request, **extra):
    # The banner's check is passed uncalled: templates call it, so only full pages (base.html) pay its query.
    return {"author": request_author(request), "auth_mode": get_config().system.auth.mode,
            "spend_warning": daily_limit_warning, **extra}
