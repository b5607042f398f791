"""The web process as a WSGI application, for `intake --server gunicorn` only.

TARSy serves HTTP and /ws from one ASGI server (tarsy/asgi.py). This module lets the intake benchmark measure
the alternative of a WSGI server for HTTP (gunicorn with threads) on the same views and settings, so the choice
stays a measured one. It does what tarsy.asgi does before serving: pooled connections, the outbox relay, the
config loaded, gc.freeze().
"""

import gc
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings")
os.environ["TARSY_ASGI"] = "1"  # settings: a web process borrows its database connections from the pool

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()

from tarsy.celery import start_outbox_relay  # noqa: E402
from tarsy.config import get_config  # noqa: E402

get_config()
start_outbox_relay()
gc.freeze()
