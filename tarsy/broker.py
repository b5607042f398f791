"""Celery's Redis transport, publishing through one Redis client per channel instead of a new one per message.

kombu's Redis channel builds a new `redis.Redis` client for every command it sends outside its event loop
(`conn_or_acquire` without a client), and so for every task published. redis-py fills about 170 response
callbacks in each new client: a fifth of a publish's CPU (0.17 ms of 0.9 ms on the benchmark host), paid for
the next task of every agent iteration. A client only borrows connections from the channel's pool and is safe to
share between threads, so one per pool serves every publish; a new one is made when the channel replaces its
pool (after a reconnect). Used when the broker URL is plain `redis://` (settings.CELERY_BROKER_TRANSPORT).
"""

from __future__ import annotations

from kombu.transport import redis


class Channel(redis.Channel):
    _shared_client = None

    def _create_client(self, asynchronous=False):
        if asynchronous:  # the event loop's own client, made once by kombu already
            return super()._create_client(asynchronous=True)
        client = self._shared_client
        if client is None or client.connection_pool is not self.pool:
            client = self._shared_client = super()._create_client()
        return client


class Transport(redis.Transport):
    Channel = Channel
