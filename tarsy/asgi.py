"""ASGI entry point: HTTP through Django, WebSockets through Channels. Fails fast on a bad config."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings")
os.environ["TARSY_ASGI"] = "1"  # read by settings: no persistent DB connections in the web process
django_asgi_app = get_asgi_application()

from tarsy.config import get_config  # noqa: E402
from tarsy.streaming.routing import build_application  # noqa: E402

get_config()
application = build_application(django_asgi_app)
