"""Content-Security-Policy on every response in every mode (embedded included); HSTS and Secure cookies when
TARSy is served over HTTPS (TARSY_HTTPS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

pytestmark = [pytest.mark.django_db]

ROOT = Path(__file__).resolve().parents[2]
POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")


@pytest.mark.parametrize("path", ["/", "/submit", "/system", "/sessions/00000000-0000-0000-0000-000000000000",
                                  "/admin/login/", "/api/docs/", "/api/docs/?script=", "/api/v1/sessions",
                                  "/health", "/no-such-page", "/static/tarsy/common.js"])
def test_every_response_carries_the_policy(path):
    response = Client(REMOTE_ADDR="127.0.0.1").get(path)
    assert response.status_code < 500 or (path == "/health" and response.status_code == 503)  # 503: no worker here
    assert response.headers["Content-Security-Policy"] == POLICY


def test_the_api_docs_have_no_inline_script():
    page = Client(REMOTE_ADDR="127.0.0.1").get("/api/docs/").content.decode()
    assert "<script>" not in page and '<script src="/api/docs/?script="></script>' in page


PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
response = Client(REMOTE_ADDR="127.0.0.1").get("/health", secure=True)
print(json.dumps({"hsts": response.headers.get("Strict-Transport-Security"),
                  "session_secure": settings.SESSION_COOKIE_SECURE, "csrf_secure": settings.CSRF_COOKIE_SECURE}))
"""


def _served(tmp_path, **env: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    environment.update(TARSY_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="tarsy.settings.web",
                       SECRET_KEY="test-secret-key", **env)
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment, check=True, timeout=300,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_over_https_hsts_and_secure_cookies(tmp_path):
    assert _served(tmp_path, TARSY_HTTPS="1") == {"hsts": "max-age=31536000", "session_secure": True,
                                                  "csrf_secure": True}
    assert _served(tmp_path) == {"hsts": None, "session_secure": False, "csrf_secure": False}
