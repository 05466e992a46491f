"""Micro-batching: grouping, length buckets, saturation, cancellation, failures.

The batcher is generic over its run function. Here the run function is a plain Python
function gated by a ``threading.Event`` so a test can hold a batch "in the model" on
purpose; end-to-end batching with ONNX Runtime is in ``test_engine.py``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

import pytest

from truthlens.detector.batcher import BACKGROUND, BatcherClosed, BatchFailed, MicroBatcher, batch_runs_alone
from truthlens.detector.types import Overloaded


class GatedRun:
    """Doubles each row's value; blocks while ``gate`` is clear; records batches."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()
        self.batches: list[list[int]] = []
        self.alone: list[bool] = []  # batch_runs_alone() of each batch, in start order
        self.fail = False

    def __call__(self, rows: Sequence[int]) -> list[int]:
        self.alone.append(batch_runs_alone())
        self.started.set()
        self.gate.wait(10)
        self.batches.append(list(rows))
        if self.fail:
            raise RuntimeError("boom")
        return [2 * r for r in rows]


def _batcher(run: GatedRun, **kw: float) -> MicroBatcher[int, int]:
    options = {"max_batch_size": 8, "max_wait_s": 0.02, "max_queue": 64} | kw
    return MicroBatcher(run, lambda r: abs(r), **options)  # type: ignore[arg-type]


async def _wait_started(run: GatedRun) -> None:
    await asyncio.to_thread(run.started.wait, 5)


async def test_concurrent_callers_share_runs() -> None:
    run = GatedRun()
    batcher = _batcher(run)
    results = await asyncio.gather(*(batcher.submit([100 + i]) for i in range(32)))
    assert results == [[2 * (100 + i)] for i in range(32)]
    assert batcher.stats.runs < 32
    assert batcher.stats.rows == 32
    assert max(len(b) for b in run.batches) == 8
    assert batcher.queue_depth == 0
    await batcher.close()


async def test_rows_of_one_call_come_back_in_order() -> None:
    run = GatedRun()
    batcher = _batcher(run, max_batch_size=3)
    assert await batcher.submit([101, 102, 103, 104, 105, 106, 107]) == [202, 204, 206, 208, 210, 212, 214]
    assert await batcher.submit([]) == []
    await batcher.close()


async def test_length_buckets_keep_short_and_long_rows_apart() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_wait_s=0.0)
    blocker = asyncio.create_task(batcher.submit([1]))
    await _wait_started(run)
    mixed = [asyncio.create_task(batcher.submit([n])) for n in (10, 1000, 12, 1100, 11)]
    await asyncio.sleep(0.01)
    run.gate.set()
    await asyncio.gather(blocker, *mixed)
    for batch in run.batches[1:]:
        assert max(batch) / min(batch) <= 2
    assert sorted(len(b) for b in run.batches[1:]) == [2, 3]
    await batcher.close()


async def test_saturated_queue_raises_overloaded_and_recovers() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_queue=3)
    waiting = [asyncio.create_task(batcher.submit([100])) for _ in range(3)]
    await _wait_started(run)
    assert batcher.queue_depth == 3
    with pytest.raises(Overloaded, match="queue is full: 3 checks in flight"):
        await batcher.submit([100])
    run.gate.set()
    assert [await t for t in waiting] == [[200]] * 3
    assert await batcher.submit([100]) == [200]
    await batcher.close()


async def test_cancelled_pending_caller_is_dropped_without_leak() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_wait_s=0.0, max_batch_size=1)
    running = asyncio.create_task(batcher.submit([100]))
    await _wait_started(run)
    pending = asyncio.create_task(batcher.submit([500, 501]))
    await asyncio.sleep(0.01)
    assert batcher.pending_rows == 2
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert batcher.pending_rows == 0
    assert batcher.queue_depth == 1
    run.gate.set()
    assert await running == [200]
    assert all(500 not in b and 501 not in b for b in run.batches)
    await batcher.close()


async def test_caller_cancelled_while_its_batch_runs_is_ignored() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_wait_s=0.0)
    doomed = asyncio.create_task(batcher.submit([100]))
    await _wait_started(run)
    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert batcher.queue_depth == 0
    run.gate.set()
    assert await batcher.submit([101]) == [202]
    await batcher.close()


async def test_event_loop_keeps_running_during_inference() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run)
    task = asyncio.create_task(batcher.submit([100]))
    await _wait_started(run)
    ticks = 0
    for _ in range(5):
        await asyncio.sleep(0.005)
        ticks += 1
    assert ticks == 5 and not task.done()
    run.gate.set()
    assert await task == [200]
    await batcher.close()


async def test_failed_run_fails_its_callers_and_not_the_next() -> None:
    run = GatedRun()
    run.fail = True
    batcher = _batcher(run)
    with pytest.raises(BatchFailed, match="RuntimeError: boom"):
        await batcher.submit([100, 101])
    run.fail = False
    assert await batcher.submit([100]) == [200]
    assert batcher.queue_depth == 0
    await batcher.close()


async def test_close_answers_waiting_callers() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run)
    task = asyncio.create_task(batcher.submit([100]))
    await _wait_started(run)
    await batcher.close()
    with pytest.raises(BatcherClosed):
        await task
    with pytest.raises(BatcherClosed):
        await batcher.submit([1])
    run.gate.set()


async def test_a_lone_batch_holds_every_slot_and_others_wait_for_it() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_wait_s=0.0, max_batch_size=1, max_in_flight=2, lone_takes_all=True)
    lone = asyncio.create_task(batcher.submit([100]))
    await _wait_started(run)
    later = asyncio.create_task(batcher.submit([101]))
    await asyncio.sleep(0.02)
    # Two slots, but the lone batch took both: the later row waits instead of sharing its cores.
    assert batcher.running_batches == 1 and batcher.pending_rows == 1
    run.gate.set()
    assert await lone == [200] and await later == [202]
    assert run.alone == [True, True]  # the later row found nothing else running either
    assert batch_runs_alone() is False  # only inside a run function
    await batcher.close()


async def test_batches_with_company_split_the_slots() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_wait_s=0.0, max_batch_size=1, max_in_flight=2, lone_takes_all=True)
    together = asyncio.create_task(batcher.submit([100, 101, 102]))
    await _wait_started(run)
    await asyncio.sleep(0.02)
    assert batcher.running_batches == 2 and batcher.pending_rows == 1
    run.gate.set()
    assert await together == [200, 202, 204]
    # The first row had rows waiting, the second a row running: each got one slot. (The last
    # may find the machine free, depending on which run ended first.)
    assert run.alone[:2] == [False, False]
    await batcher.close()


async def test_without_lone_takes_all_a_lone_batch_leaves_the_other_slots_free() -> None:
    # A remote model server's round trips should overlap, whatever else is in flight.
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_wait_s=0.0, max_batch_size=1, max_in_flight=2)
    first = asyncio.create_task(batcher.submit([100]))
    await _wait_started(run)
    second = asyncio.create_task(batcher.submit([101]))
    for _ in range(100):
        if batcher.running_batches == 2:
            break
        await asyncio.sleep(0.01)
    assert batcher.running_batches == 2
    run.gate.set()
    assert await first == [200] and await second == [202]
    assert run.alone == [False, False]
    await batcher.close()


def test_bad_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        MicroBatcher(GatedRun(), abs, max_batch_size=0, max_wait_s=0.0, max_queue=1)


async def _background(batcher: MicroBatcher[int, int], rows: list[int]) -> list[int]:
    token = BACKGROUND.set(True)  # as the dry run submits its rows
    try:
        return await batcher.submit(rows)
    finally:
        BACKGROUND.reset(token)


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the batcher never got there")


async def test_a_live_row_runs_before_background_rows_queued_earlier() -> None:
    # One slot: background rows hold it one batch at a time; a live row that arrives behind
    # eight of them is the next batch, not the ninth.
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_wait_s=0.0, max_batch_size=1, max_in_flight=1)
    background = asyncio.create_task(_background(batcher, [100 + i for i in range(8)]))
    await _wait_started(run)
    await _until(lambda: batcher.pending_rows == 7)
    live = asyncio.create_task(batcher.submit([7]))
    await _until(lambda: batcher.pending_rows == 8)
    run.gate.set()
    assert await live == [14] and await background == [2 * (100 + i) for i in range(8)]
    assert [b[0] for b in run.batches][:2] == [100, 7]
    await batcher.close()


async def test_background_batches_leave_a_slot_for_live_rows_and_never_take_every_core() -> None:
    run = GatedRun()
    run.gate.clear()
    batcher = _batcher(run, max_wait_s=0.0, max_batch_size=1, max_in_flight=2, lone_takes_all=True)
    background = asyncio.create_task(_background(batcher, [100, 101, 102]))
    await _wait_started(run)
    await asyncio.sleep(0.05)
    # Two slots, three background rows: one runs, the others wait for it, not for the free slot.
    assert batcher.running_batches == 1 and batcher.pending_rows == 2
    live = asyncio.create_task(batcher.submit([7]))
    await _until(lambda: batcher.running_batches == 2)  # the live row took the free slot at once
    run.gate.set()
    assert await live == [14] and await background == [200, 202, 204]
    assert run.alone[0] is False  # the lone background row did not take both slots
    await batcher.close()
