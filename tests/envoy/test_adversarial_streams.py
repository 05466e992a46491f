"""Held answers survive the processor going away: SIGKILL and SIGTERM with held streams in flight.

Real Envoy (the shipped ``envoy.yaml``), the real processor (``truthlens serve``) and the shipped
ONNX detector; scripted: only the upstream, which streams slowly so the exchanges are in flight
when the processor stops. A held stream is one the gateway withholds until it is checked (the
``block`` action, or ``streaming: hold``): its bytes must reach the client whatever happens to
the processor, or a fail-closed route must end with an explicit error.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_routes import CONTEXT, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision, parse_sse

from truthlens.testing import launch

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
GRACE_S = 5.0  # the processor's --grace-s in the drain test; checks give way at 60 % of it (3 s)

DECISIONS = [
    decision("hold", route_header="hold", streaming="hold", actions=["header", "body"]),
    decision("block", route_header="block", actions=["header", "block"]),
    decision("closed", route_header="closed", streaming="hold", fail_policy="closed", actions=["header", "body"]),
    decision("chat", priority=10, actions=["header", "body"], streaming="passthrough"),
]


def _slow(word: str, seconds: float) -> dict[str, Any]:
    """A rule streaming the hallucinated answer one token per event over about ``seconds``."""
    events = len(HALLUCINATED.split()) + 3  # role, tokens, finish, [DONE]
    return {"name": word, "match": {"user": word},
            "reply": {"content": HALLUCINATED, "chunk_tokens": 1, "chunk_delay_s": seconds / events}}


SCRIPT = [_slow("slow-4s", 4.0), _slow("slow-9s", 9.0)]


@pytest.fixture
def streams(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    yield stack
    if not stack.processor_alive():
        stack.processor_grace_s = None
        stack.start_processor()
        stack.wait_processor()


def _in_flight(stack: Stack, question: str, route: str) -> tuple[threading.Thread, list[RawResponse]]:
    out: list[RawResponse] = []
    body = chat_body(question, context=CONTEXT, stream=True)
    thread = threading.Thread(target=lambda: out.append(stack.raw("POST", PATH, body, {"x-test-route": route})))
    thread.start()
    return thread, out


def _events(body: bytes) -> list[Any]:
    """The SSE payloads without the per-call id and timestamp (they differ between calls)."""
    return [e if isinstance(e, str) else {k: v for k, v in e.items() if k not in ("id", "created")}
            for e in parse_sse(body)]


def _reference(stack: Stack, question: str) -> list[Any]:
    """What the upstream sends for ``question``, asked directly (no Envoy, no processor)."""
    return _events(stack.upstream_raw("POST", PATH, chat_body(question, stream=True)).body)


def _wait_calls(stack: Stack, n: int) -> None:
    launch.wait_until(lambda: len(stack.upstream_calls()) >= n, f"{n} upstream calls", None, 15)


def _restart(stack: Stack, grace_s: float | None) -> None:
    stack.stop_processor()
    stack.processor_grace_s = grace_s
    stack.start_processor()
    stack.wait_processor()


def test_sigkill_with_held_streams_in_flight_loses_no_byte(streams: Stack) -> None:
    flights = [_in_flight(streams, "slow-4s", route) for route in ("hold", "block", "closed")]
    _wait_calls(streams, 3)
    time.sleep(1.5)  # every stream is part-way through
    streams.kill_processor()
    for thread, _ in flights:
        thread.join(30)
    reference = _reference(streams, "slow-4s")
    for (_, out), route in zip(flights, ("hold", "block", "closed"), strict=True):
        (resp,) = out
        assert resp.status == 200, route
        # Every event the upstream sent, in order, unchanged: Envoy kept the held bytes.
        assert _events(resp.body) == reference, route
        # Nothing claims a check that did not finish.
        assert resp.headers["x-truthlens-detected"] == "unavailable", route
        assert resp.headers["x-truthlens-reason"] == "unfinished", route


def test_sigterm_releases_held_streams_before_the_grace_runs_out(streams: Stack) -> None:
    _restart(streams, GRACE_S)
    try:
        flights = {
            # ends after checks gave way (60 % of the grace) and before the grace runs out
            "draining": _in_flight(streams, "slow-4s", "hold"),
            "closed": _in_flight(streams, "slow-4s", "closed"),
            # still streaming when the grace runs out: Envoy holds it and lets it through
            "outlasting": _in_flight(streams, "slow-9s", "hold"),
        }
        _wait_calls(streams, 3)
        streams.signal_processor(signal.SIGTERM)
        for thread, _ in flights.values():
            thread.join(30)
    finally:
        _restart(streams, None)

    reference = _events(streams.upstream_raw("POST", PATH, chat_body("slow-4s", stream=True)).body)
    (released,) = flights["draining"][1]
    assert released.status == 200
    events = _events(released.body)
    # The upstream's events unchanged, then the unavailable verdict, then [DONE].
    assert events[:-2] == reference[:-1] and events[-1] == "[DONE]"
    assert events[-2]["truthlens"]["status"] == "unavailable"
    assert events[-2]["truthlens"]["reason"] == "draining"
    assert released.headers["x-truthlens-reason"] == "draining"

    (refused,) = flights["closed"][1]
    (error,) = parse_sse(refused.body)  # an explicit error, nothing of the unchecked answer
    assert error["error"]["code"] == "draining"
    assert b"Speer" not in refused.body

    (outlasting,) = flights["outlasting"][1]
    assert outlasting.status == 200
    assert _events(outlasting.body) == _reference(streams, "slow-9s")
    assert outlasting.headers["x-truthlens-detected"] == "unavailable"
