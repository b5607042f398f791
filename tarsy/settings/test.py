"""The test run (pytest: DJANGO_SETTINGS_MODULE in pyproject.toml).

Each test process has a queue, a live-event prefix and a cache prefix of its own, so a worker or test left over
from another run cannot take its tasks or events; the worker and web processes a test starts are given the same
names (TARSY_QUEUE, TARSY_CHANNEL_PREFIX: tests/support/processes.py)."""

import os

from .base import *

SECRET_KEY = SECRET_KEY or "test-only-secret-key-not-for-production"

EVENTS_PREFIX = os.environ.get("TARSY_CHANNEL_PREFIX") or f"tarsy-test-{os.getpid()}"
CACHES["default"]["KEY_PREFIX"] = EVENTS_PREFIX
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("TARSY_QUEUE") or f"tarsy-test-{os.getpid()}"

if DATABASE_URL:
    # Named explicitly (django/channels#2176), after the database in DATABASE_URL, so test runs against
    # different databases on one server never share (and drop) each other's test database.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("TARSY_TEST_DB_NAME", f"test_{DATABASES['default']['NAME']}")}
else:
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test_tarsy.sqlite3")}
