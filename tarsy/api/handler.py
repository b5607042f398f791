"""The ASGI handler for Django's HTTP side: each request's sync code in one hop onto a reused thread.

Every view and middleware of TARSy is synchronous. Django's stock `ASGIHandler` costs a POST here about
twice the CPU of the view itself, for two reasons this handler removes:

- It builds an async middleware chain and adapts each sync middleware on its own: a request hops from the
  event loop to a thread and back twice per middleware (about fifteen hops for settings.MIDDLEWARE). Here
  the synchronous chain is built, as under WSGI, and chain and view run as one call.
- It gives every request a fresh thread (`ThreadSensitiveContext`), so each request also pays for starting
  and joining a thread and rebuilds everything kept per thread (database wrapper, Celery's backend).
  Here requests run on a fixed pool of threads, the model of a threaded WSGI server.

Database connections: the request's thread takes a connection when it first needs one and gives it back
(to the pool in settings, or closes it) when its response has been built — what the request_started /
request_finished signals do under WSGI. Those signals still fire, on asgiref's shared thread; a streaming
response's iterator also runs there and returns what it used through request_finished. Bodies, streaming
and client disconnects are handled by `ASGIHandler` itself. An async view would still work (Django runs
it with `async_to_sync`), only without the benefit.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.db import close_old_connections

from .errors import json_error


def request_threads() -> int:
    """As many threads as database connections the process may hold: no request waits for a connection
    while holding a thread (settings: OPTIONS["pool"]["max_size"]; 10 without a pool)."""
    pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    return int(pool.get("max_size", 10)) if isinstance(pool, dict) else 10


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._executor = ThreadPoolExecutor(max_workers=request_threads(), thread_name_prefix="tarsy-request")

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)  # without ASGIHandler's per-request ThreadSensitiveContext

    def create_request(self, scope, body_file):
        """Django answers a request it cannot even build (a query string that is no UTF-8, a body past the limit)
        with a bare HTML/text page; ours is the API's JSON error, naming what was wrong."""
        request, error = super().create_request(scope, body_file)
        if error is None:
            return request, None
        if error.status_code == 413:
            return None, json_error(413, "payload_too_large", "The request body exceeds the size limit.")
        return None, json_error(error.status_code, "bad_request", "The query string is not valid UTF-8.")

    async def get_response_async(self, request):
        return await sync_to_async(self._respond, thread_sensitive=False, executor=self._executor)(request)

    def _respond(self, request):
        close_old_connections()  # a connection this thread kept is checked (or dropped) first, as at request start
        try:
            return self.get_response(request)
        finally:
            close_old_connections()  # with CONN_MAX_AGE=0: back to the pool now, not at a later request
