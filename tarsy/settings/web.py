"""The web process: the ASGI server (tarsy.asgi, `manage.py serve` and `runserver`).

The server runs each request's sync code on a thread of its own, where persistent connections would pile up
until PostgreSQL refuses clients, and a new connection per request costs more than the request itself: the web
process borrows connections from Django's per-process pool (psycopg 3) and gives them back when the request
ends. In embedded mode the same process also runs the worker threads (tarsy.embedded)."""

from .base import *
from .base import require_secret_key
from .env import env_number

require_secret_key()

if DATABASE_URL:
    # max_size bounds this process's connections (size PostgreSQL for web processes × max_size); a request
    # finding none free waits up to `timeout` seconds, then fails rather than queueing forever.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": env_number("TARSY_WEB_DB_POOL_MIN", 2),
        "max_size": env_number("TARSY_WEB_DB_POOL_MAX", 10),
        "timeout": env_number("TARSY_WEB_DB_POOL_TIMEOUT", 10.0, float),
    }
