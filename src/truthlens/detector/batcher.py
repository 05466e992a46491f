"""Dynamic micro-batching: rows from concurrent callers share one model run.

Callers ``submit`` all rows of one check at once and await their outputs. A single worker
task forms batches (up to ``max_batch_size`` rows, waiting at most ``max_wait_s`` after the
oldest row arrived, rows of similar length together to limit padding) and runs them in
dedicated threads, ``max_in_flight`` at a time (overlapping CPU runs, or a remote model
server's round trips), so inference never blocks the event loop. With ``lone_takes_all`` (CPU
runs), a batch that finds nothing else running and nothing else waiting takes every slot: its
run function may then use the whole machine (:func:`batch_runs_alone`) and later rows wait for
it instead of competing for its cores. The queue is bounded by checks in flight; a cancelled
caller's rows are dropped before they run, or their outputs ignored if already running.

Rows submitted under :data:`BACKGROUND` (the ``POST /v1/check`` dry run) yield to live rows: a
batch is formed from live rows whenever any wait, background batches never take every slot
(with ``max_in_flight`` > 1 one slot stays free for live rows), so a live check waits for at
most one background batch, never for a queue of them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from truthlens.detector.types import DetectorError, Overloaded

log = logging.getLogger(__name__)

RowT = TypeVar("RowT")
OutT = TypeVar("OutT")

# Rows join the oldest row's batch when their lengths are within this ratio (plus slack),
# so one long row does not make a batch of short ones pad to its length.
LENGTH_RATIO = 1.25
LENGTH_SLACK = 32


# When the check submitting rows must be answered (event-loop clock): the engine sets it from
# the route's detection budget. A run function that calls a remote server caps its call with
# batch_time_left(), so a batch never outlives every caller waiting for it.
CHECK_DEADLINE: ContextVar[float | None] = ContextVar("detector_check_deadline", default=None)
_running_batch = threading.local()
# Rows submitted while this is True run at background priority (see the module docstring): a
# caller that is no live exchange (the dry run) sets it around its checks.
BACKGROUND: ContextVar[bool] = ContextVar("detector_background", default=False)


def batch_time_left() -> float | None:
    """Inside a run function: seconds until the last caller of this batch gives up (None: some
    caller set no deadline)."""
    return getattr(_running_batch, "time_left", None)


def batch_runs_alone() -> bool:
    """Inside a run function: whether this batch holds every slot (nothing else runs until it
    ends), so it may use every core."""
    return bool(getattr(_running_batch, "alone", False))


def _run_with_budget(run_batch: Callable[[Sequence[Any]], Sequence[Any]], rows: Sequence[Any],
                     time_left: float | None, alone: bool) -> Sequence[Any]:
    _running_batch.time_left = time_left
    _running_batch.alone = alone
    try:
        return run_batch(rows)
    finally:
        _running_batch.time_left = None
        _running_batch.alone = False


class BatchFailed(DetectorError):
    """The model run that held the caller's rows raised; the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__("model_error", message)


class BatcherClosed(DetectorError):
    def __init__(self) -> None:
        super().__init__("closed", "the detector is shut down")


@dataclass(frozen=True, slots=True)
class BatchStats:
    runs: int  # model runs so far
    rows: int  # rows run so far
    largest_batch: int


@dataclass(eq=False, slots=True)
class _Job(Generic[OutT]):
    future: asyncio.Future[list[OutT]]
    outputs: list[OutT | None]
    remaining: int
    cancelled: bool = False


@dataclass(slots=True)
class _Entry(Generic[RowT]):
    job: _Job[Any]
    index: int
    row: RowT
    length: int
    enqueued: float = field(default_factory=time.monotonic)
    deadline: float | None = None  # CHECK_DEADLINE of the submitting check
    background: bool = False  # BACKGROUND of the submitting check


class MicroBatcher(Generic[RowT, OutT]):
    """Groups rows of concurrent ``submit`` calls into calls of ``run_batch`` in a worker thread."""

    def __init__(
        self,
        run_batch: Callable[[Sequence[RowT]], Sequence[OutT]],
        length: Callable[[RowT], int],
        *,
        max_batch_size: int,
        max_wait_s: float,
        max_queue: int,
        max_in_flight: int = 1,
        lone_takes_all: bool = False,
    ) -> None:
        if max_batch_size < 1 or max_queue < 1 or max_wait_s < 0 or max_in_flight < 1:
            raise ValueError("max_batch_size, max_queue and max_in_flight must be >= 1 and max_wait_s >= 0")
        self._run_batch = run_batch
        self._length = length
        self._max_batch = max_batch_size
        self._max_wait = max_wait_s
        self._max_queue = max_queue
        self._pending: deque[_Entry[RowT]] = deque()
        self._jobs: set[_Job[OutT]] = set()
        self._max_in_flight = max_in_flight
        self._lone_takes_all = lone_takes_all
        self._executor = ThreadPoolExecutor(max_workers=max_in_flight, thread_name_prefix="detector-infer")
        self._running: set[asyncio.Task[None]] = set()
        self._slots: asyncio.Semaphore | None = None
        self._slots_held = 0  # by batches running now
        self._background_running = 0  # background batches running now
        # Background batches run at most this many at once: one slot stays for live rows.
        self._background_cap = max(1, max_in_flight - 1)
        self._worker: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Event | None = None
        self._closed = False
        self._runs = 0
        self._rows = 0
        self._largest = 0

    @property
    def queue_depth(self) -> int:
        """Checks submitted and not yet answered (the ``truthlens_detector_queue_depth`` gauge)."""
        return len(self._jobs)

    @property
    def pending_rows(self) -> int:
        return len(self._pending)

    @property
    def running_batches(self) -> int:
        """Batches in the run function now (at most ``max_in_flight``)."""
        return len(self._running)

    @property
    def stats(self) -> BatchStats:
        return BatchStats(runs=self._runs, rows=self._rows, largest_batch=self._largest)

    async def submit(self, rows: Sequence[RowT]) -> list[OutT]:
        """Outputs for ``rows`` in order. Raises :class:`Overloaded` when the queue is full,
        :class:`BatchFailed` when the model run failed, :class:`BatcherClosed` after ``close``."""
        if self._closed:
            raise BatcherClosed()
        if not rows:
            return []
        if len(self._jobs) >= self._max_queue:
            raise Overloaded(
                f"detector queue is full: {len(self._jobs)} checks in flight (max_queue={self._max_queue}); "
                "the check was not run"
            )
        wakeup = self._ensure_worker()
        loop = asyncio.get_running_loop()
        job: _Job[OutT] = _Job(future=loop.create_future(), outputs=[None] * len(rows), remaining=len(rows))
        self._jobs.add(job)
        deadline, background = CHECK_DEADLINE.get(), BACKGROUND.get()
        self._pending.extend(_Entry(job, i, row, self._length(row), deadline=deadline, background=background)
                             for i, row in enumerate(rows))
        wakeup.set()
        try:
            return await job.future
        except asyncio.CancelledError:
            self._drop(job)
            raise
        finally:
            self._jobs.discard(job)

    async def close(self) -> None:
        """Stop the worker; waiting callers get :class:`BatcherClosed`."""
        self._closed = True
        for job in list(self._jobs):
            if not job.future.done():
                job.future.set_exception(BatcherClosed())
        self._pending.clear()
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
        for task in list(self._running):
            task.cancel()
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _ensure_worker(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done() or self._worker.get_loop() is not loop:
            if self._worker is not None and not self._worker.done() and not self._worker.get_loop().is_closed():
                raise RuntimeError("MicroBatcher is bound to another running event loop")
            self._wakeup = asyncio.Event()
            self._slots = asyncio.Semaphore(self._max_in_flight)
            self._slots_held = 0  # the new slots; batches of a loop that died never release theirs
            self._worker = loop.create_task(self._work(self._wakeup), name="detector-batcher")
        assert self._wakeup is not None
        return self._wakeup

    def _drop(self, job: _Job[OutT]) -> None:
        job.cancelled = True
        if any(e.job is job for e in self._pending):
            self._pending = deque(e for e in self._pending if e.job is not job)

    async def _work(self, wakeup: asyncio.Event) -> None:
        assert self._slots is not None
        while True:
            if not self._pending:
                wakeup.clear()
                await wakeup.wait()
                continue
            # A free slot first: rows that arrive while every slot is busy join the next batch.
            await self._slots.acquire()
            batch = []
            if self._pending:  # callers may have given up while every slot was busy
                await self._gather(wakeup)
                batch = self._take_batch()
            if not batch:
                self._slots.release()
                continue
            background = batch[0].background
            if background and self._background_running >= self._background_cap:
                # Only background rows wait and their share of the slots is taken: put them back
                # and wait for a live row or for a background batch to end (both set wakeup).
                self._pending.extendleft(reversed(batch))
                self._slots.release()
                wakeup.clear()
                await wakeup.wait()
                continue
            held = 1
            if self._lone_takes_all and not background and not self._pending and self._slots_held == 0:
                # Nothing else runs or waits: this batch takes the free slots too (no waiting).
                while held < self._max_in_flight:
                    await self._slots.acquire()
                    held += 1
            self._slots_held += held
            self._background_running += background
            task = asyncio.get_running_loop().create_task(self._run(batch, self._slots, held))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run(self, batch: list[_Entry[RowT]], slots: asyncio.Semaphore, held: int) -> None:
        loop = asyncio.get_running_loop()
        deadlines = [e.deadline for e in batch]
        time_left = None if None in deadlines else max(d for d in deadlines if d is not None) - loop.time()
        alone = held == self._max_in_flight
        try:
            outputs = await loop.run_in_executor(
                self._executor, _run_with_budget, self._run_batch, [e.row for e in batch], time_left, alone
            )
            if len(outputs) != len(batch):
                raise RuntimeError(f"model returned {len(outputs)} outputs for {len(batch)} rows")
        except asyncio.CancelledError:
            raise
        except DetectorError as exc:  # a backend's own label (a remote server down, late) stays
            log.warning("detector batch of %d rows failed (%s): %s", len(batch), exc.reason, exc)
            self._fail(batch, exc)
            return
        except Exception as exc:  # the model failed: every caller in the batch gets unavailable
            log.exception("detector batch of %d rows failed", len(batch))
            self._fail(batch, BatchFailed(f"model run failed: {type(exc).__name__}: {exc}"))
            return
        finally:
            self._slots_held -= held
            for _ in range(held):
                slots.release()
            if batch[0].background:
                self._background_running -= 1
                if self._wakeup is not None:
                    self._wakeup.set()  # background rows held back for this slot may go now
        self._runs += 1
        self._rows += len(batch)
        self._largest = max(self._largest, len(batch))
        self._deliver(batch, outputs)

    async def _gather(self, wakeup: asyncio.Event) -> None:
        """Wait for the batch to fill, at most until the oldest row has waited ``max_wait``."""
        deadline = self._pending[0].enqueued + self._max_wait
        while self._pending and len(self._pending) < self._max_batch:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            wakeup.clear()
            try:
                await asyncio.wait_for(wakeup.wait(), left)
            except TimeoutError:
                return

    def _take_batch(self) -> list[_Entry[RowT]]:
        while self._pending and self._pending[0].job.cancelled:
            self._pending.popleft()
        if not self._pending:
            return []
        # Live rows first: a batch is background only when no live row waits.
        anchor_entry = next((e for e in self._pending if not e.background and not e.job.cancelled), self._pending[0])
        background = anchor_entry.background
        anchor = anchor_entry.length
        low, high = anchor / LENGTH_RATIO - LENGTH_SLACK, anchor * LENGTH_RATIO + LENGTH_SLACK
        batch: list[_Entry[RowT]] = []
        rest: deque[_Entry[RowT]] = deque()
        for entry in self._pending:
            if entry.job.cancelled:
                continue
            if len(batch) < self._max_batch and entry.background == background and low <= entry.length <= high:
                batch.append(entry)
            else:
                rest.append(entry)
        self._pending = rest
        return batch

    def _deliver(self, batch: list[_Entry[RowT]], outputs: Sequence[OutT]) -> None:
        for entry, output in zip(batch, outputs, strict=True):
            job = entry.job
            if job.cancelled or job.future.done():
                continue
            job.outputs[entry.index] = output
            job.remaining -= 1
            if job.remaining == 0:
                job.future.set_result(list(job.outputs))

    def _fail(self, batch: list[_Entry[RowT]], error: DetectorError) -> None:
        for entry in batch:
            job = entry.job
            if not job.cancelled and not job.future.done():
                job.future.set_exception(error)
                # The rest of this job's rows are useless now.
                self._drop(job)
