"""A per-process cache of what every iteration of an execution shares, for parts built from data that does not
change while the execution runs (its row's fixed fields, the configuration, closed stages).

Any worker may run an execution's next iteration, so a cached part must be what any process would build from
the database and the configuration: an entry is kept for one configuration object (a replaced configuration
builds it anew), and its key carries every row field it depends on that may change (e.g. the provider after a
fallback took over). Nothing an iteration writes (budget, conversation, timeline) belongs here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from tarsy.config import get_config

T = TypeVar("T")


class PerExecution(Generic[T]):
    """Built values by key, the most recently used `size` kept (a worker runs a few executions at a time)."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, tuple[object, T]] = OrderedDict()
        self._lock = threading.Lock()  # the embedded worker runs steps in threads

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        config = get_config()
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] is config:
                self._items.move_to_end(key)
                return hit[1]
        value = build()  # outside the lock: two threads may build the same value, both correct
        with self._lock:
            self._items[key] = (config, value)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
