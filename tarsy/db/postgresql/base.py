"""Django's PostgreSQL backend whose pool checks a borrowed connection without a round trip.

With CONN_HEALTH_CHECKS, Django gives the psycopg pool `ConnectionPool.check_connection`, an empty query on
every borrow: one of the few round trips an alert POST makes, for nothing on a healthy connection. (Pool
OPTIONS cannot replace it: Django passes `check` itself.) A connection idle in the pool has nothing to read;
when the server ends it (a restart, pg_terminate_backend, idle timeout) it sends the reason and closes the
socket, which then polls readable, and only then is the full check run, which fails, so the pool discards
the connection and lends another. What no poll can see (a peer gone silently) the first query meets, as it
would after the empty query's own wait.
"""

from __future__ import annotations

import select

from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base
from psycopg import pq


def check_idle_connection(conn) -> None:
    """The pool's `check`: the full round trip only for a connection that is not idle and quiet."""
    from psycopg_pool import ConnectionPool

    if conn.closed or conn.info.transaction_status != pq.TransactionStatus.IDLE or _readable(conn.fileno()):
        ConnectionPool.check_connection(conn)


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        options = self.settings_dict["OPTIONS"].get("pool")
        if (self.alias == NO_DB_ALIAS or not options or self.alias in self._connection_pools
                or not self.settings_dict["CONN_HEALTH_CHECKS"]):
            return super().pool  # as Django builds it (and refuses it with persistent connections)
        if self.settings_dict.get("CONN_MAX_AGE", 0) != 0:
            return super().pool
        from psycopg_pool import ConnectionPool

        kwargs = self.get_connection_params()
        kwargs["autocommit"] = True  # as Django's: it sets the mode per connection later
        pool = ConnectionPool(kwargs=kwargs, open=False, configure=self._configure_connection,
                              check=check_idle_connection, **({} if options is True else options))
        self._connection_pools.setdefault(self.alias, pool)  # another thread's, if it won the race
        return self._connection_pools[self.alias]
