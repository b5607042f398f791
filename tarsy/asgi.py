"""ASGI entry point: HTTP through Django, WebSockets through Channels. Fails fast on a bad config."""

import gc
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings.web")
django.setup(set_prefix=False)  # what django.core.asgi.get_asgi_application does before building its handler

from tarsy.api.handler import JsonErrorsASGIHandler  # noqa: E402
from tarsy.celery import start_outbox_relay  # noqa: E402
from tarsy.config import get_config  # noqa: E402
from tarsy.streaming.routing import build_application  # noqa: E402

django_asgi_app = JsonErrorsASGIHandler()
get_config()
application = build_application(django_asgi_app)
start_outbox_relay()  # tasks decided here or elsewhere that the broker did not take then: tarsy/outbox.py

# What is loaded by now (Django, DRF, the config, the masking rules) lives as long as the process: keep it out
# of the collector's scans, as the workers do. Each full collection had walked all of it while holding the GIL,
# stalling every request in flight: intake's p99 at 32 connections was ~215 ms before the freeze, 87–154 ms after.
gc.freeze()
