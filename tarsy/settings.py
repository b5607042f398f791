"""One env-driven settings module.

Embedded mode (no DATABASE_URL / REDIS_URL): SQLite under TARSY_DATA_DIR, Celery on
`memory://` with an in-process worker, live events handed over in-process.
Production (both set): PostgreSQL, Redis as broker and live-event pub/sub.
"""

from __future__ import annotations

import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("TARSY_DATA_DIR", BASE_DIR / "var")).resolve()
DATABASE_URL = os.environ.get("DATABASE_URL", "")
REDIS_URL = os.environ.get("REDIS_URL", "")
EMBEDDED = not (DATABASE_URL and REDIS_URL)
TESTING = "pytest" in sys.modules or os.environ.get("TARSY_TESTING") == "1"
if TESTING and REDIS_URL and os.environ.get("PYTEST_XDIST_WORKER"):
    # Each pytest-xdist worker (gw0, gw1, ...) on a Redis database of its own, counted on from REDIS_URL's.
    _redis = urlsplit(REDIS_URL)
    _redis_db = int(_redis.path.strip("/") or 0) + int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw"))
    REDIS_URL = urlunsplit(_redis._replace(path=f"/{_redis_db % 16}"))  # Redis has 16 databases by default


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


def _env_number(name: str, default: float, kind: type = int) -> float:
    """A numeric setting; a malformed value names its variable rather than failing deep inside a library."""
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {'an integer' if kind is int else 'a number'}, "
                                   f"got {value!r}") from None


def _env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    return default if value is None else [item.strip() for item in value.split(",") if item.strip()]


if not EMBEDDED and (DATABASE_URL or REDIS_URL) and not (DATABASE_URL and REDIS_URL):
    raise ImproperlyConfigured("Set both DATABASE_URL and REDIS_URL for production mode, or neither for embedded mode")

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not EMBEDDED and not TESTING:
        raise ImproperlyConfigured("SECRET_KEY must be set in production mode (DATABASE_URL and REDIS_URL are set)")
    # Embedded mode serves localhost only: a per-data-dir key keeps admin logins across restarts.
    key_file = DATA_DIR / "secret_key"
    try:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        if not key_file.exists():
            key_file.write_text(secrets.token_urlsafe(50))
            key_file.chmod(0o600)
        SECRET_KEY = key_file.read_text().strip()
    except OSError:
        SECRET_KEY = secrets.token_urlsafe(50)

DEBUG = _env_bool("DEBUG", False)
ALLOWED_HOSTS = _env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"] if EMBEDDED else [])
CSRF_TRUSTED_ORIGINS = _env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",  # must come first so runserver serves websockets
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served by TARSy itself (no CDN)
    "channels",
    "axes",
    "tarsy",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "tarsy.security_headers.ContentSecurityPolicy",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "tarsy.api.bodies.RequestBodyLimit",  # 413 in the API's shape before anything reads a body past the limit
    "tarsy.api.cross_site.CrossSiteGuard",  # after CommonMiddleware: the Host it compares is validated
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # turns a locked-out login into a 429 page
]

# Scripts, styles, images and connections (fetch, the /ws socket) from TARSy itself only; no inline code, no
# framing, no plugins. `data:` images: the dashboard's empty favicon and Swagger UI's icons.
CONTENT_SECURITY_POLICY = os.environ.get("TARSY_CONTENT_SECURITY_POLICY", "; ".join([
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
    "font-src 'self'", "object-src 'none'", "base-uri 'self'", "form-action 'self'", "frame-ancestors 'none'"]))
# Served over HTTPS (TLS at TARSy, or at a proxy that says so in X-Forwarded-Proto): cookies only over HTTPS,
# and browsers told to use nothing else for a year.
TARSY_HTTPS = _env_bool("TARSY_HTTPS", False)
if TARSY_HTTPS:
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = _env_number("TARSY_HSTS_SECONDS", 365 * 24 * 3600)
    if _env_bool("TARSY_BEHIND_TLS_PROXY", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

ROOT_URLCONF = "tarsy.urls"
ASGI_APPLICATION = "tarsy.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# ---- database ---------------------------------------------------------------
if DATABASE_URL:
    # Workers keep their connection (a step makes many short queries). The ASGI server runs each request's
    # sync code on a thread of its own, where persistent connections would pile up until PostgreSQL refuses
    # clients, and a new connection per request costs more than the request itself: the web process borrows
    # connections from Django's per-process pool (psycopg 3) and gives them back when the request ends; with
    # CONN_HEALTH_CHECKS the pool checks each borrowed connection, so one the server ended is never lent.
    #
    # A threads-pool worker (TARSY_WORKER_POOL=threads) runs many iterations per process: persistent connections
    # would be one per thread. It pools them too, and a thread gives its connection back while it waits on an LLM
    # or a tool (tarsy.db_connections), so a few connections carry hundreds of iterations in flight. A prefork
    # child runs one task at a time and keeps its one connection.
    web_process = os.environ.get("TARSY_ASGI") == "1"
    threads_worker = not web_process and os.environ.get("TARSY_WORKER_POOL") == "threads"
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0 if web_process or threads_worker
                                                  else 60, conn_health_checks=True)}
    DATABASES["default"].setdefault("OPTIONS", {})
    # A blocking libpq call ignores Celery's soft time limit: bound every statement.
    DATABASES["default"]["OPTIONS"].setdefault("options", "-c statement_timeout=30000")
    if web_process:
        # max_size bounds this process's connections (size PostgreSQL for web processes × max_size); a request
        # finding none free waits up to `timeout` seconds, then fails rather than queueing forever.
        DATABASES["default"]["OPTIONS"]["pool"] = {
            "min_size": _env_number("TARSY_WEB_DB_POOL_MIN", 2),
            "max_size": _env_number("TARSY_WEB_DB_POOL_MAX", 10),
            "timeout": _env_number("TARSY_WEB_DB_POOL_TIMEOUT", 10.0, float),
        }
    elif threads_worker:
        # max_size bounds the worker's connections whatever its concurrency; a thread finding none free waits.
        DATABASES["default"]["OPTIONS"]["pool"] = {
            "min_size": 2,
            "max_size": _env_number("TARSY_WORKER_DB_POOL_MAX", 20),
            "timeout": _env_number("TARSY_WORKER_DB_POOL_TIMEOUT", 30.0, float),
        }
    # Named explicitly (django/channels#2176), after the database in DATABASE_URL, so test runs against
    # different databases on one server never share (and drop) each other's test database.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("TARSY_TEST_DB_NAME", f"test_{DATABASES['default']['NAME']}")}
else:
    # The database holds login sessions and everything investigated: readable by TARSy's user only, like
    # secret_key. SQLite gives the -wal and -shm files the database file's mode.
    _sqlite_file = DATA_DIR / "tarsy.sqlite3"
    try:
        DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
        DATA_DIR.chmod(0o700)
        os.close(os.open(_sqlite_file, os.O_CREAT | os.O_WRONLY, 0o600))
        for _path in (_sqlite_file, *(Path(f"{_sqlite_file}{suffix}") for suffix in ("-wal", "-shm"))):
            if _path.exists():
                _path.chmod(0o600)
    except OSError as exc:
        raise ImproperlyConfigured(f"TARSy's data directory {DATA_DIR} is not usable: {exc}") from None
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(_sqlite_file),
            # Web threads and the in-process worker write concurrently: WAL + busy timeout.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            "TEST": {"NAME": str(DATA_DIR / "test_tarsy.sqlite3")},
        }
    }
# A process that switched databases after it started (an eval run writes to `<name>_eval`, evals.database) names
# the one in use here for the children that must read it too: the built-in `tarsy` MCP server.
if os.environ.get("TARSY_DATABASE_NAME"):
    DATABASES["default"]["NAME"] = os.environ["TARSY_DATABASE_NAME"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# ---- live events ----------------------------------------------------------------
# Channels serves the WebSocket protocol and auth; events do not go through a channel layer. Workers PUBLISH
# each event once on Redis (`<prefix>:events:<channel>`), and every web process subscribes once per channel and
# sends the event to its local sockets (tarsy/streaming/fanout.py). Without Redis (embedded mode) the
# in-process worker hands events to the server's loop directly.
EVENTS_PREFIX = os.environ.get("TARSY_CHANNEL_PREFIX") or (f"tarsy-test-{os.getpid()}" if TESTING else "tarsy")

# ---- cache ------------------------------------------------------------------------
# What every web process must agree on (intake rate limits, PagerDuty event ids seen): Redis in production;
# embedded mode is one process, where Django's default in-memory cache is shared by all its threads.
if REDIS_URL and not EMBEDDED:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": EVENTS_PREFIX}}

# ---- celery -------------------------------------------------------------------
# The hard kill comes this long after the soft limit; an iteration's lease lasts timeout + grace.
ITERATION_HARD_LIMIT_GRACE_S = _env_number("TARSY_HARD_LIMIT_GRACE", 30.0, float)
MAX_ITERATION_TIMEOUT_S = _env_number("TARSY_MAX_ITERATION_TIMEOUT", 900)
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_IGNORE_RESULT = True
# No result backend (Celery's default): tasks record their outcome in the database. CELERY_RESULT_BACKEND is
# also a pre-4.0 setting name, which Celery warns about at every worker start when read from a mapping.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# One queue for every task. Iterations, summaries and scoring wait on LLMs; the control tasks (dispatch, finish,
# sweep) are short database work that threads serve as well, so a threads worker (deploy/'s default, TARSy
# holding the time limits: tarsy/watchdog.py) takes them all, and a second queue would only add a deployment to
# size. A team that wants control tasks on prefork can route them with Celery's task_routes.
# Tests get a queue of their own so a worker left over from another run cannot take their tasks.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("TARSY_QUEUE") or (f"tarsy-test-{os.getpid()}" if TESTING else "tarsy")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # a broker outage must not end the worker; it waits and reconnects
# A step in flight keeps running when the broker drops; its late ack may fail, and the state guards make the
# redelivered copy a no-op.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # No unacked copies in Redis (kombu's ack emulation): the database's lease, the sweeper and the re-drive after
    # a broker restart (tarsy/pipeline/redrive.py) bring lost work back, in seconds to minutes where a visibility
    # timeout would take one hard limit and more. With the copies, a threads worker that lost the broker while
    # tasks ran died restoring them: kombu's Redis QoS reopens a pool through the connection the consumer had
    # already detached, and raises AttributeError ("Unrecoverable error"). Without them a delivered message is
    # still put back on a warm shutdown (kombu's in-memory restore, which logs its failures and goes on).
    "ack_emulation": False,
    "global_keyprefix": os.environ.get("TARSY_BROKER_PREFIX", ""),
    "health_check_interval": 10,  # notice a dead Redis connection (e.g. after a Redis restart) within seconds
    "socket_keepalive": True,
    "retry_on_timeout": True,
}
if EMBEDDED:
    # The in-memory transport polls; its 1 s default would add a second to every iteration hop.
    CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"] = 0.02
# Celery's Django fixup closes the database connection around every task by default: a new PostgreSQL
# connection per iteration (~15 ms here). Reuse it; a connection that died is replaced by the tasks'
# retry on database errors (tarsy.tasks).
CELERY_DB_REUSE_MAX = 100
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_TASK_SEND_SENT_EVENT = False
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")

# ---- DRF ----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "tarsy.api.errors.exception_handler",
    "DEFAULT_AUTHENTICATION_CLASSES": ["tarsy.api.auth.ConfiguredAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tarsy.api.auth.ConfiguredPermission"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "TARSy API",
    "DESCRIPTION": "Submit alerts, follow investigations, chat about their results.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # The schema and docs follow the auth mode like the API (authentication: the API's default classes).
    "SERVE_PERMISSIONS": ["tarsy.api.auth.ConfiguredPermission"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Choice sets that share a field name (`kind`, `status`) with others: named here, not by a hash (which also
    # makes drf-spectacular warn on every schema request, /api/docs/ included).
    "ENUM_NAME_OVERRIDES": {"MemoryKindEnum": "tarsy.models.memory.MemoryKind",
                            "MemoryStateEnum": "tarsy.models.memory.MemoryState",
                            "SessionStatusEnum": "tarsy.models.sessions.SessionStatus",
                            "ExecutionStatusEnum": "tarsy.models.sessions.ExecStatus",
                            "ScoreStatusEnum": "tarsy.models.quality.ScoreStatus"},
}
DATA_UPLOAD_MAX_MEMORY_SIZE = 3 * 1024 * 1024  # alert data is capped at 1 MB; leave room for JSON escaping

# ---- TARSy --------------------------------------------------------------------
TARSY_CONFIG_DIR = os.environ.get("TARSY_CONFIG_DIR", "")
# Alerts accepted per client address (REST and webhooks), DRF's `<n>/<second|minute|hour|day>`; empty: no limit.
# One Alertmanager or Grafana sends a few deliveries a minute even in a storm (it batches alerts per group).
TARSY_INTAKE_RATE = os.environ.get("TARSY_INTAKE_RATE", "600/minute").strip()
if TARSY_INTAKE_RATE:
    _count, _, _period = TARSY_INTAKE_RATE.partition("/")
    if not (_count.isascii() and _count.isdigit() and _period[:1] in ("s", "m", "h", "d")):
        raise ImproperlyConfigured(f"TARSY_INTAKE_RATE must look like 600/minute, got {TARSY_INTAKE_RATE!r}")
# PostgreSQL: the statement timeout of a session search (API list and dashboard history), well under the 30 s of
# other statements: a search past it is refused with a 400 rather than holding a request thread.
TARSY_SEARCH_TIMEOUT_MS = _env_number("TARSY_SEARCH_TIMEOUT_MS", 3000)
TARSY_HOST = os.environ.get("TARSY_HOST", "127.0.0.1")
TARSY_PORT = _env_number("TARSY_PORT", 8000)

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "tarsy" / "static"] if (BASE_DIR / "tarsy" / "static").exists() else []

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
LOGIN_URL = "/admin/login/"

# Login throttling (django-axes): failed logins are counted per username and client address in the database (so
# every web process and replica shares the count); at the limit that pair is refused with 429 until the cool-off
# has passed. The address is the connection's peer, as for auth (tarsy.identity.client_ip), never X-Forwarded-For.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = _env_number("TARSY_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=_env_number("TARSY_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "tarsy.identity.client_ip"
AXES_RESET_ON_SUCCESS = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("TARSY_LOG_LEVEL", "INFO")},
    "loggers": {
        # With DEBUG=False Django logs 500s nowhere unless this is configured.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        "httpx": {"level": "WARNING"},
        "celery": {"level": "WARNING"},  # one line per task would drown what matters
        "kombu.connection": {"level": "ERROR"},  # memory:// has no host; the warning about it is noise
        "mcp": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # lockouts are warnings; a start-up banner per process is noise
    },
}
