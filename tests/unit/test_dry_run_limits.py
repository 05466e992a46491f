"""``POST /v1/check`` bounds what one dry run asks of the serving detector: requests checked at
once (429 beyond), items and characters per request (413), items one after another, every row at
the detector's background priority.

The detector here is a test double that holds each check until the test lets it go (the point
is when checks run, not what they find; the real detector is ``test_dry_run_check.py``'s)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from truthlens.detector.batcher import BACKGROUND
from truthlens.detector.types import Detection, DetectionInput
from truthlens.gateway.policy.config import Config, parse_config
from truthlens.gateway.server.dry_run import DryRunCheck, Limits

ITEM = {"context": ["The tower was completed in 1889."], "question": "When?", "answer": "In 1925."}


class HeldDetector:
    """Answers clean once ``gate`` is set; records each check's background flag and overlap."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.background: list[bool] = []
        self.running = 0
        self.most_at_once = 0

    async def detect(self, item: DetectionInput, *, threshold: float, timeout_s: float | None = None) -> Detection:
        self.background.append(BACKGROUND.get())
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        self.entered.set()
        try:
            await asyncio.to_thread(self.gate.wait, 10)
        finally:
            self.running -= 1
        return Detection(status="clean", score=0.1)

    async def detect_many(self, items: Sequence[DetectionInput], *, threshold: float,
                          timeout_s: float | None = None) -> list[Detection]:
        return [await self.detect(i, threshold=threshold, timeout_s=timeout_s) for i in items]

    async def close(self) -> None:
        pass


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The serving loop, in its own thread, as ``truthlens serve`` runs it."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def _config() -> Config:
    return parse_config({"version": 1, "hallucination": {"enabled": True}})


def _in_thread(check: DryRunCheck, body: bytes, out: list[tuple[int, dict[str, Any]]]) -> threading.Thread:
    thread = threading.Thread(target=lambda: out.append(check(body)))
    thread.start()
    return thread


def test_requests_over_max_concurrent_get_429_and_items_run_one_at_a_time_in_the_background(
        loop: asyncio.AbstractEventLoop) -> None:
    detector = HeldDetector()
    check = DryRunCheck(loop, _config, lambda: detector, Limits(max_concurrent=1))
    first: list[tuple[int, dict[str, Any]]] = []
    thread = _in_thread(check, json.dumps({"items": [ITEM] * 3}).encode(), first)
    assert detector.entered.wait(10)
    status, doc = check(json.dumps(ITEM).encode())
    assert status == 429 and doc["reason"] == "busy" and "--check-max-concurrent" in doc["error"], doc
    detector.gate.set()
    thread.join(10)
    assert first[0][0] == 200 and len(first[0][1]["results"]) == 3
    assert detector.most_at_once == 1  # the batch's items went one after another
    assert detector.background == [True, True, True]  # at the detector's background priority
    # The slot is free again once the first request has answered.
    assert check(json.dumps(ITEM).encode())[0] == 200


@pytest.mark.parametrize(("limits", "body", "names"), [
    (Limits(max_items=2), {"items": [ITEM] * 3}, "at most 2 per request (--check-max-items)"),
    (Limits(max_chars=100), {"items": [ITEM, {**ITEM, "answer": "x" * 60}]}, "at most 100 per request"),
    (Limits(max_chars=100), {**ITEM, "context": ["y" * 101]}, "--check-max-chars"),
])
def test_items_and_characters_over_the_limits_are_413_before_any_check(
        loop: asyncio.AbstractEventLoop, limits: Limits, body: dict[str, Any], names: str) -> None:
    detector = HeldDetector()
    status, doc = DryRunCheck(loop, _config, lambda: detector, limits)(json.dumps(body).encode())
    assert status == 413 and names in doc["error"], doc
    assert detector.background == []


def test_limits_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="--check-max-concurrent"):
        Limits(max_concurrent=0)
