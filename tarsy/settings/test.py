"""The test run (pytest: DJANGO_SETTINGS_MODULE in pyproject.toml).

Each test process has a queue, a live-event prefix and a cache prefix of its own, so a worker or test left over
from another run cannot take its tasks or events; the worker and web processes a test starts are given the same
names (TARSY_QUEUE, TARSY_CHANNEL_PREFIX: tests/support/processes.py)."""

import os
from urllib.parse import urlsplit, urlunsplit

if os.environ.get("REDIS_URL") and os.environ.get("PYTEST_XDIST_WORKER"):
    # Each pytest-xdist process (gw0, gw1, ...) on a Redis database of its own, counted on from REDIS_URL's;
    # set before the base settings read it, so the broker, cache and live events all use it.
    _redis = urlsplit(os.environ["REDIS_URL"])
    _redis_db = int(_redis.path.strip("/") or 0) + int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw"))
    os.environ["REDIS_URL"] = urlunsplit(_redis._replace(path=f"/{_redis_db % 16}"))  # Redis has 16 by default

from .base import *  # noqa: E402 (after the Redis database is chosen)

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
