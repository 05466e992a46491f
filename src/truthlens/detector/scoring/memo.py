"""A bounded, thread-safe LRU of what one check derives from a context, keyed by its content.

Why: in a RAG session several answers (a refine chain, ``n`` choices, a re-ask) are checked
against the same passages, and a long context's tokenisation, pieces and word statistics cost
more than a short answer's own rows. Keyed by the text itself (Python hashes it once per
string object and compares the content on a hit), so a changed passage is a new entry and
nothing stale is ever served. Bounded by entries and by a size each value is charged
(tokens, characters), so a flood of distinct long contexts evicts the oldest instead of
growing. Values must be immutable (frozen dataclasses, read-only arrays, tuples): a hit hands
every caller the same object.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """``get(key, make)``: the cached value, else ``make()`` stored under ``key``."""

    def __init__(self, *, max_entries: int, max_size: int, size: Callable[[V], int] = lambda _v: 1) -> None:
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._max_entries = max(0, max_entries)
        self._max_size = max(0, max_size)
        self._size_of = size
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self, key: K) -> bool:
        """Whether ``key`` is cached now (no hit counted, no reordering)."""
        with self._lock:
            return key in self._entries

    def get(self, key: K, make: Callable[[], V]) -> V:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found[0]
            self.misses += 1
        # Made outside the lock: two threads may both make a missing value; both are equal.
        value = make()
        self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        """Keeps ``value`` under ``key`` (not when it alone is over the size bound)."""
        cost = self._size_of(value)
        if self._max_entries == 0 or cost > self._max_size:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= old[1]
            self._entries[key] = (value, cost)
            self._size += cost
            while len(self._entries) > self._max_entries or self._size > self._max_size:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._size -= evicted

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._size = 0
