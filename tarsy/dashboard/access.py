"""Dashboard pages use the API's auth mode: none = loopback clients only; proxy = trusted proxy identity or a
Django session login; token = Django session login (API tokens are for programs, not browsers)."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render

from tarsy.config import get_config
from tarsy.identity import client_ip, is_loopback, proxy_identity


def _denied(request, reason: str):
    return render(request, "dashboard/denied.html", {"reason": reason}, status=403)


def dashboard_view(view):
    """Decorator: admit a request the API would admit, else a 403 page or the login page."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        mode = get_config().system.auth.mode
        if mode == "none":
            if not is_loopback(client_ip(request)):
                return _denied(request, "Authentication mode 'none' serves clients on this machine only.")
        elif not (mode == "proxy" and proxy_identity(request)) and not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper
