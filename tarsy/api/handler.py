"""The ASGI handler for Django's HTTP side: each request's sync code in one hop onto a reused thread.

Every view and middleware of TARSy is synchronous. Django's stock `ASGIHandler` costs a POST here about
twice the CPU of the view itself, for three reasons this handler removes:

- It builds an async middleware chain and adapts each sync middleware on its own: a request hops from the
  event loop to a thread and back twice per middleware (about fifteen hops for settings.MIDDLEWARE). Here
  the synchronous chain is built, as under WSGI, and chain and view run as one call.
- It gives every request a fresh thread (`ThreadSensitiveContext`), so each request also pays for starting
  and joining a thread and rebuilds everything kept per thread (database wrapper, Celery's backend).
  Here requests run on a fixed pool of threads, the model of a threaded WSGI server.
- It sends request_started, and closes the response (which sends request_finished), in two more hops onto
  asgiref's one shared thread. Here both run in the request's hop, on its thread, as under WSGI.

Database connections: the request's thread takes a connection when it first needs one and gives it back
(to the pool in settings, or closes it) when its response has been built — request_started /
request_finished, as under WSGI. A streaming response is closed after its body, as Django does (on
asgiref's shared thread, where its iterator also runs); its thread gives its connection back first. Bodies,
streaming and client disconnects are handled as in `ASGIHandler.handle`. An async view would still work
(Django runs it with `async_to_sync`), only without the benefit.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.db import close_old_connections
from django.http import FileResponse
from django.urls import set_script_prefix

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

    async def handle(self, scope, receive, send) -> None:
        """`ASGIHandler.handle` with the request's sync work in one call (`_serve`)."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))

        async def process_request():
            response = await sync_to_async(self._serve, thread_sensitive=False, executor=self._executor)(
                scope, body_file)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:  # the client went away while the response was sent
                pass
            return response

        # As Django: a client disconnecting while the view runs cancels the task waiting for it.
        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)), asyncio.create_task(process_request())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            await signals.request_finished.asend(sender=self.__class__)
        else:
            if response.streaming:
                await sync_to_async(response.close)()
        body_file.close()

    def _serve(self, scope, body_file):
        """request_started, the request, the middleware chain and view, and (unless it streams) the response's
        close with request_finished: on this thread, which gives back its database connection at the end."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if response.streaming:
            close_old_connections()  # its close, after the body, sends request_finished on another thread
        else:
            response.close()
        return response

    def create_request(self, scope, body_file):
        """Django answers a request it cannot even build (a query string that is no UTF-8, a body past the limit)
        with a bare HTML/text page; ours is the API's JSON error, naming what was wrong."""
        request, error = super().create_request(scope, body_file)
        if error is None:
            return request, None
        if error.status_code == 413:
            return None, json_error(413, "payload_too_large", "The request body exceeds the size limit.")
        return None, json_error(error.status_code, "bad_request", "The query string is not valid UTF-8.")
