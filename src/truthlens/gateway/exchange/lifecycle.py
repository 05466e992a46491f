"""A worker's lifecycle as its streams see it: how many streams are open (the per-worker cap)
and whether the worker is draining (a SIGTERM arrived).

Drain means release: once the grace period is nearly spent, every check still running gives
up and its held answer goes out unchanged with an ``unavailable`` verdict (reason
``draining``), before gRPC cancels the streams. A check that finishes earlier keeps its verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

# Share of the grace period a running check may still use; the rest is left for the replies
# to reach Envoy before the server cancels what is still open.
_CHECK_SHARE = 0.6


class Draining(Exception):
    """The worker is shutting down: a check gave way so its answer is released in time."""

    reason = "draining"


class Lifecycle:
    """Shared by every stream of one worker process (one event loop)."""

    def __init__(self) -> None:
        self.active = 0  # streams open now
        self._release = asyncio.Event()  # set once running checks must give way
        self._draining = False
        self._timer: asyncio.TimerHandle | None = None

    @property
    def draining(self) -> bool:
        return self._draining

    def try_open(self, cap: int) -> bool:
        """Count a new stream; False (not counted) when ``cap`` streams are already open."""
        if self.active >= cap:
            return False
        self.active += 1
        return True

    def close(self) -> None:
        self.active -= 1

    def begin_drain(self, grace_s: float) -> None:
        """No new work is refused, but checks get only part of ``grace_s`` from now."""
        if self._draining:
            return
        self._draining = True
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(max(0.0, grace_s * _CHECK_SHARE), self._release.set)

    async def bounded(self, work: Awaitable[T]) -> T:
        """``work``'s result, or :class:`Draining` when the drain's release time comes first."""
        if self._release.is_set():
            if asyncio.iscoroutine(work):
                work.close()  # never started: no "was never awaited" warning
            raise Draining("the gateway is shutting down")
        task = asyncio.ensure_future(work)
        release = asyncio.ensure_future(self._release.wait())
        try:
            done, _ = await asyncio.wait({task, release}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()  # this exchange itself was cancelled
            raise
        finally:
            release.cancel()
        if task in done:
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task  # let the check's own cleanup run before its answer is released
        raise Draining("the gateway is shutting down")
