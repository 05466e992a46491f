"""Live calls before background ones on a shared model: the gate the sentence embedder's runs
pass, so that the dry run (``POST /v1/check``, which sets
:data:`truthlens.detector.batcher.BACKGROUND`) does not slow a live exchange's embedder pass as
it no longer slows its detector rows.

A live call holds the gate while it runs its batches (any number at once). A background call
passes it once per batch: it waits while a live call holds it, at most ``max_wait_s`` per batch,
so a steady stream of live calls delays the dry run without stopping it. A live call never
waits; it shares the cores with at most the one background batch already running.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from truthlens.detector.batcher import BACKGROUND

# Longest a background batch waits for live calls to end (one embedder batch takes ~1-10 ms).
MAX_WAIT_S = 0.5


class PriorityGate:
    """Counts live calls; background batches wait for none to run (bounded)."""

    def __init__(self, max_wait_s: float = MAX_WAIT_S) -> None:
        self._live = 0
        self._idle = threading.Condition()
        self._max_wait_s = max_wait_s

    @staticmethod
    def background() -> bool:
        """Whether the calling context runs at background priority."""
        return BACKGROUND.get()

    @contextmanager
    def live(self) -> Iterator[None]:
        """Held by a live call while it runs."""
        with self._idle:
            self._live += 1
        try:
            yield
        finally:
            with self._idle:
                self._live -= 1
                if self._live == 0:
                    self._idle.notify_all()

    def before_background_batch(self) -> None:
        """Wait (at most ``max_wait_s``) until no live call runs."""
        with self._idle:
            self._idle.wait_for(lambda: self._live == 0, timeout=self._max_wait_s)
