"""``detector.backend: remote`` against a real Triton Inference Server on loopback.

One ``tritonserver`` (from ``nvidia-pytriton``, see ``src/truthlens/testing/model_server.py``) hosts the
shipped model for this module. The remote detector must give the in-process detector's
verdicts on the same inputs (same rows, same logits), and a server that dies or stalls must
give "unavailable" with its reason, never "clean", and recover when the server is back.
Skipped, with the reason, where Triton cannot run (not x86-64 Linux, or no Python with pytriton:
set ``TRUTHLENS_TRITON_PYTHON``); failed instead in CI (``CI=true``), where ``.ci/run`` builds that
environment: a CI whose Triton environment broke must not pass by skipping.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import environments
import pytest
from shipped_inputs import CONTEXT, GROUNDED, HALLUCINATED, QUESTION

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.backends.remote import RemoteDetector
from truthlens.detector.types import Detection, DetectionInput, DetectorSettings, RemoteSettings
from truthlens.testing import model_server

_REASON = model_server.unavailable_reason()

# Long enough that an answer whose claims stand in reports far apart needs several rows per
# check (a batch of rows per call); claims whose evidence one row holds share it.
LONG_CONTEXT = [
    f"Report {i}: the harbour crane number {i} lifts {10 + i} tonnes and was serviced in {1990 + i}."
    for i in range(60)
] + list(CONTEXT)
ITEMS = [
    DetectionInput(list(CONTEXT), QUESTION, GROUNDED),
    DetectionInput(list(CONTEXT), QUESTION, HALLUCINATED),
    DetectionInput(LONG_CONTEXT, QUESTION, GROUNDED + " Crane 12 lifts 22 tonnes."),
    DetectionInput(LONG_CONTEXT, QUESTION, HALLUCINATED + " Crane 12 lifts 95 tonnes."),
    # Evidence far apart in the long context: rows that no claim can share (a row per claim),
    # of one length (reports of the same shape), so a padded batch of them is the rows run alone.
    DetectionInput(LONG_CONTEXT, QUESTION, "Crane 13 lifts 23 tonnes. Crane 57 lifts 67 tonnes."),
    # More claims than one row holds beside their reports (rows now share evidence until they
    # overflow: the two claims above fit one): two rows.
    DetectionInput(LONG_CONTEXT, QUESTION, " ".join(f"Crane {i} lifts {10 + i} tonnes." for i in range(3, 59, 7))),
]


@pytest.fixture(scope="module")
def triton(shipped_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[model_server.TritonServer]:
    environments.require(_REASON, "Triton")
    with model_server.running(shipped_model_dir, tmp_path_factory.mktemp("triton")) as server:
        yield server


def _settings(model_dir: Path) -> DetectorSettings:
    return DetectorSettings(model_dir=str(model_dir), provider="cpu", intra_op_threads=1, backend="onnx")


def _remote(model_dir: Path, url: str, *, in_flight: int = 4, **options: object) -> RemoteDetector:
    settings = DetectorSettings(
        model_dir=str(model_dir), intra_op_threads=1, backend="remote", max_in_flight=in_flight,
        remote=RemoteSettings(url=url, **options),  # type: ignore[arg-type]
    )
    detector = create_detector(settings)
    assert isinstance(detector, RemoteDetector)
    return detector


async def _until(condition: Callable[[], bool], failure: str, guard_s: float = 120.0) -> None:
    """Wait for ``condition`` (polled); ``guard_s`` only keeps a regression from hanging the suite."""
    deadline = time.monotonic() + guard_s
    while not condition():
        assert time.monotonic() < deadline, failure
        await asyncio.sleep(0.05)


async def _until_ready(detector: RemoteDetector) -> None:
    await _until(lambda: detector.backend_ready, "the remote detector did not see the server ready again")


async def _first_verdict(detector: RemoteDetector, item: DetectionInput, timeout_s: float = 20.0) -> Detection:
    """The first answer that is not "unavailable" within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = await detector.detect(item, threshold=0.5)
        if result.status != "unavailable" or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.2)


async def test_remote_verdicts_equal_in_process_verdicts(triton: model_server.TritonServer,
                                                         shipped_model_dir: Path) -> None:
    local = create_detector(_settings(shipped_model_dir))
    # A loaded two-core CI machine runs long batches slowly: this test is about agreement.
    # One batch in flight, one check at a time: both sides run byte-identical batches, which
    # matters for an int8 model (dynamic quantisation scales activations per batch, so its
    # logits move slightly with what shares the batch, in-process as much as remotely).
    remote = _remote(shipped_model_dir, triton.grpc_url, timeout_ms=30_000)
    sequential = _remote(shipped_model_dir, triton.grpc_url, timeout_ms=30_000, in_flight=1)
    try:
        assert remote.backend_ready and sequential.backend_ready
        expected = [await local.detect(item, threshold=0.5) for item in ITEMS]
        same_batches = [await sequential.detect(item, threshold=0.5) for item in ITEMS]
        assert all(d.status != "unavailable" for d in expected)
        assert max(d.chunks for d in expected) > 1  # multi-row checks, several rows per call
        for want, have in zip(expected, same_batches, strict=True):
            assert have.status == want.status
            assert [(s.start, s.end, s.reason) for s in have.spans] == [(s.start, s.end, s.reason) for s in want.spans]
            assert have.chunks == want.chunks
            if want.chunks == 1:
                assert have.score == pytest.approx(want.score, abs=1e-5)
            else:
                # Known gap (docs/limitations.md): in process, each row of a multi-row check runs
                # alone; the remote client sends them as one batch, and the int8 model's dynamic
                # quantisation scales activations per batch, so the score moves in the third
                # decimal (measured: 0.0521 against 0.0546). Same verdict and spans, asserted above.
                assert have.score == pytest.approx(want.score, abs=0.01)
        # Concurrent checks, four calls in flight, Triton's dynamic batcher merging them: same verdicts.
        concurrent = await remote.detect_many(ITEMS, threshold=0.5)
        assert [d.status for d in concurrent] == [d.status for d in expected]
    finally:
        await local.close()
        await remote.close()
        await sequential.close()


def _count_calls(remote: RemoteDetector, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record each inference call the remote client makes from now on (the call still runs)."""
    client = remote.runner._client
    calls: list[int] = []
    real = client.infer

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "infer", counted)
    return calls


async def test_a_stalled_server_times_out_then_recovers(triton: model_server.TritonServer,
                                                        shipped_model_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    remote = _remote(shipped_model_dir, triton.grpc_url, timeout_ms=1500, health_interval_s=0.2)
    assert triton.child is not None
    group = triton.child.proc.pid
    try:
        before = await remote.detect(ITEMS[1], threshold=0.5)
        assert before.status in ("clean", "detected")
        os.killpg(group, signal.SIGSTOP)  # a server that accepts nothing and answers nothing
        try:
            slow = await remote.detect(ITEMS[1], threshold=0.5)
            assert slow.status == "unavailable" and slow.score is None
            assert slow.reason in ("remote_timeout", "remote_unavailable")
            await _until(lambda: not remote.backend_ready, "the health thread never saw the server down")
            calls = _count_calls(remote, monkeypatch)
            fast = await remote.detect(ITEMS[0], threshold=0.5)
            assert fast.status == "unavailable" and fast.reason == "remote_unavailable"
            assert calls == [], "a check waited on a server known to be down"
        finally:
            os.killpg(group, signal.SIGCONT)
        await _until_ready(remote)
        after = await _first_verdict(remote, ITEMS[1])  # the resumed server drains its backlog first
        assert after.status == before.status and after.score == pytest.approx(before.score, abs=1e-6)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGCONT)
        await remote.close()


async def test_a_call_ends_with_the_checks_budget_not_the_remote_timeout(
    triton: model_server.TritonServer, shipped_model_dir: Path
) -> None:
    # remote.timeout_ms is 10 minutes and the health poll is slow: only the check's 0.3 s budget
    # can end the stalled call and free its slot before the test's own limit.
    remote = _remote(shipped_model_dir, triton.grpc_url, in_flight=1, timeout_ms=600_000, health_interval_s=60)
    assert triton.child is not None
    group = triton.child.proc.pid
    try:
        assert (await remote.detect(ITEMS[0], threshold=0.5)).status != "unavailable"
        os.killpg(group, signal.SIGSTOP)
        try:
            late = await remote.detect(ITEMS[0], threshold=0.5, timeout_s=0.3)
            assert late.status == "unavailable" and late.reason == "timeout"
            # The server is stopped and the remote timeout is 10 minutes: only the check's budget
            # can free the slot while it stays stopped.
            await _until(lambda: not remote.batcher.running_batches, "the call outlived its check's budget")
        finally:
            os.killpg(group, signal.SIGCONT)
        assert (await _first_verdict(remote, ITEMS[0])).status != "unavailable"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGCONT)
        await remote.close()


async def test_a_killed_server_gives_unavailable_under_traffic_and_recovers(
    triton: model_server.TritonServer, shipped_model_dir: Path
) -> None:
    """Runs last in this module: it kills and restarts the module's server."""
    remote = _remote(shipped_model_dir, triton.grpc_url, timeout_ms=10_000, health_interval_s=0.2)
    try:
        first = await remote.detect(ITEMS[1], threshold=0.5)
        assert first.status in ("clean", "detected")
        results = []

        async def traffic(stop: asyncio.Event) -> None:
            while not stop.is_set():
                results.append(await remote.detect(ITEMS[1], threshold=0.5))

        stop = asyncio.Event()
        workers = [asyncio.create_task(traffic(stop)) for _ in range(4)]
        await _until(lambda: len(results) >= 4, "no check finished before the kill")  # traffic is flowing
        await asyncio.to_thread(triton.kill)
        # Traffic goes on until the health thread has seen the server gone and a check after the
        # kill has ended (as unavailable, or the assertions below fail).
        after_kill = len(results)
        await _until(lambda: not remote.backend_ready and len(results) > after_kill, "no check ended after the kill")
        stop.set()
        await asyncio.gather(*workers)
        statuses = [r.status for r in results]
        assert statuses[0] == first.status and "unavailable" in statuses, statuses
        # Once the server is gone every check is unavailable: a lost server never reads as a verdict.
        lost = statuses.index("unavailable")
        assert set(statuses[lost:]) == {"unavailable"}, statuses
        assert {r.reason for r in results if r.status == "unavailable"} <= {"remote_unavailable", "remote_timeout"}
        assert not remote.backend_ready

        await asyncio.to_thread(triton.start)  # the same ports: the gateway reconnects by itself
        await _until_ready(remote)
        back = await _first_verdict(remote, ITEMS[1])
        assert back.status == first.status and back.score == pytest.approx(first.score, abs=1e-6)
    finally:
        await remote.close()
