"""Celery worker and beat (tarsy.celery).

A prefork child runs one task at a time and keeps its one connection (base). A threads worker
(TARSY_WORKER_POOL=threads, the pool its command line names) runs many iterations per process: persistent
connections would be one per thread. It pools them, and a thread gives its connection back while it waits on an
LLM or a tool (tarsy.db_connections), so a few connections carry hundreds of iterations in flight."""

import os

from .base import *
from .base import require_secret_key
from .env import env_number

require_secret_key()

if DATABASE_URL and os.environ.get("TARSY_WORKER_POOL") == "threads":
    # max_size bounds the worker's connections whatever its concurrency; a thread finding none free waits.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 2,
        "max_size": env_number("TARSY_WORKER_DB_POOL_MAX", 20),
        "timeout": env_number("TARSY_WORKER_DB_POOL_TIMEOUT", 30.0, float),
    }
