"""The web process as a WSGI application, for `intake --server gunicorn` only.

TARSy serves HTTP and /ws from one ASGI server (tarsy/asgi.py). This module lets the intake benchmark measure
the alternative of a WSGI server for HTTP (gunicorn with threads) on the same views and settings, so the choice
stays a measured one. Importing tarsy.asgi prepares the process as a web process (pooled connections, the
config checked, the outbox relay, gc.freeze()); only the handler differs.
"""

from django.core.wsgi import get_wsgi_application

import tarsy.asgi  # noqa: F401  (the web process's start-up, one place for both servers)

application = get_wsgi_application()
