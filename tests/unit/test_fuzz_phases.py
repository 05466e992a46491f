"""The fuzzer's hostile streams (``tests/fuzzing.py``) through the processor's streamed-response phase,
cut into Envoy's chunks at arbitrary points, over a real gRPC channel (no Envoy: the split points
are the test's, which Envoy would not let it choose).

On a passthrough fail-open route every byte the upstream sent is released, in order, but for the
events that name the verdict (dropped or cut out of), and no verdict but the gateway's reaches the
client. On a fail-closed route the stream ends checked or refused: one verdict of the gateway's,
and when it says ``unavailable`` (the gateway gave up on the answer) a refusal follows it and
ends the stream; nothing of the upstream's follows a refusal. (A closed route that gave up as an
open one does, releasing the rest with an ``unavailable`` verdict, fails this.)

Real: the gRPC server, the processor, the shipped detector in ONNX Runtime. Generated: every byte
of the upstream's answer and where Envoy cut it.
"""

from __future__ import annotations

import grpc
import pytest
from fuzzing import (
    assert_released,
    chat_chunks,
    event_text,
    forged_in,
    framed,
    gateway_verdicts,
    splits,
    whatwg_events,
)
from hypothesis import given
from hypothesis import strategies as st
from shipped_inputs import HALLUCINATED
from test_stream import _stream, channel, released, sse_stream

__all__ = ["channel"]  # the module's gRPC processor (tests/unit/test_stream.py)

_BASE = [text + "\n\n" for text in sse_stream(HALLUCINATED).decode().split("\n\n") if text]


@st.composite
def _cut_streams(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """The hallucinated stream with up to three generated events before ``[DONE]``, and its cuts."""
    events = list(_BASE)
    for extra in draw(st.lists(event_text(chat_chunks()), max_size=3)):
        events.insert(draw(st.integers(1, len(events) - 1)), extra)
    body = draw(framed(events))
    return body, draw(splits(body))


@pytest.mark.asyncio(loop_scope="session")  # where the channel's server runs
@given(case=_cut_streams())
async def test_a_passthrough_stream_releases_every_byte_in_order_wherever_it_was_cut(
    channel: grpc.aio.Channel, case: tuple[bytes, list[bytes]]
) -> None:
    body, pieces = case
    out = released((await _stream(channel, pieces))[3:], [*pieces, b""])
    assert_released(body, out)


@pytest.mark.asyncio(loop_scope="session")
@given(case=_cut_streams())
async def test_nothing_of_the_upstream_follows_a_fail_closed_refusal(
    channel: grpc.aio.Channel, case: tuple[bytes, list[bytes]]
) -> None:
    body, pieces = case
    out = released((await _stream(channel, pieces, route="closed"))[3:], [*pieces, b""])
    events = whatwg_events(out)
    assert not any(forged_in(name, data) for name, data in events)
    refusals = [i for i, (_, data) in enumerate(events) if data.startswith('{"error":')]
    if refusals:  # the refusal ends the stream: nothing of the upstream's after it
        assert refusals == [len(events) - 1]
    verdicts = gateway_verdicts(events)
    assert len(verdicts) == 1, verdicts  # checked or refused, the client learns which, once
    where, status = verdicts[0]
    if status == "unavailable":  # gave up: closed means the refusal, right after the verdict
        assert refusals == [where + 1], events[where:]
