"""Response body (STREAMED SSE): answer every chunk in order, release only whole events, and
append the verdict before ``data: [DONE]``.

``passthrough`` forwards each whole event at once and checks the accumulated answer at the end;
``hold`` withholds the stream, checks it, and sends the final (possibly rewritten) answer
re-chunked. Broken framing or a truncated stream releases what arrived, unchanged, followed by
an "unavailable" verdict: nothing is lost and nothing hangs.
"""

from __future__ import annotations

import json
from typing import Any

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway import mutations, openai_body, sse
from truthlens.gateway.phases.check import check, skip
from truthlens.gateway.phases.state import CheckedRequest, Runtime, StreamedResponse, StreamState
from truthlens.gateway.presentation import Presentation


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    st = state.streamed
    checked = state.checked
    assert st is not None
    chunk = msg.response_body
    if st.finished or checked is None:
        return mutations.passthrough("response_body")
    st.pending += chunk.body
    out = bytearray()
    try:
        events = st.decoder.feed(chunk.body)
        if chunk.end_of_stream:
            events += st.decoder.flush()
    except sse.SSEError as exc:
        return mutations.chunk_reply("response_body", give_up(state, st, checked, rt, exc.reason, str(exc)))
    try:
        await _consume(state, st, checked, rt, events, out)
    except Exception:
        # A bug: hand what was built back to ``pending`` so the service's fallback releases
        # every byte in order.
        st.pending[:0] = out
        raise
    if chunk.end_of_stream and not st.finished:
        out += give_up(state, st, checked, rt, "sse_framing", "the stream ended without data: [DONE]")
    return _reply(chunk.body, out)


async def _consume(
    state: StreamState,
    st: StreamedResponse,
    checked: CheckedRequest,
    rt: Runtime,
    events: list[sse.SSEEvent],
    out: bytearray,
) -> None:
    """Feed whole events to the accumulator; append the bytes to release now to ``out``."""
    for i, event in enumerate(events):
        if event.is_done:
            st.done_seen = True
            if st.strategy == "hold":
                # The withheld answer up to and including [DONE] is replaced by the re-chunked
                # one; ``pending`` is trimmed only once the replacement exists.
                tail = sum(len(e.raw) for e in events[i + 1 :]) + st.decoder.pending_bytes
                withheld = len(st.pending) - tail
                before_done = bytes(st.pending[: withheld - len(event.raw)])
                replacement = await _finish(state, st, checked, rt, before_done)
                del st.pending[:withheld]
                out += replacement
            else:
                out += await _finish(state, st, checked, rt, b"")
                out += event.raw
                _forwarded(st, event.raw)
            break
        if event.has_data:
            try:
                st.accumulator.add(_json_object(event.data))
            except (openai_body.BodyError, ValueError) as exc:
                # Unreadable event: release it and everything withheld, then say why.
                out += give_up(state, st, checked, rt, getattr(exc, "reason", "sse_framing"), str(exc))
                return
        if st.strategy == "passthrough":
            out += event.raw
            _forwarded(st, event.raw)
    if st.finished:
        # Whatever follows [DONE] is not part of the answer: it flows unchanged from here on.
        out += st.pending
        st.pending.clear()


async def _finish(
    state: StreamState, st: StreamedResponse, checked: CheckedRequest, rt: Runtime, withheld: bytes
) -> bytes:
    """Check the accumulated answer. Passthrough: return the bytes that go before ``[DONE]``;
    hold: return what replaces the held events (``withheld``) and their ``[DONE]``."""
    st.finished = True
    answers = tuple(st.accumulator.contents())
    if not answers:
        shown = skip(state, rt, checked.route, checked.decision.name, "no_choices")
        if st.strategy == "hold" and shown.refusal is None:
            return withheld + _verdict_events(st, shown, 0) + sse.DONE_EVENT
        return _verdict_events(st, shown, 0)
    shown = await check(state, checked, rt, answers)
    if st.strategy == "passthrough":
        return _verdict_events(st, shown, len(answers))
    if shown.refusal is not None:
        return _refusal_event(shown)
    acc = st.accumulator
    return openai_body.rechunk(
        acc.meta, shown.final_contents(answers), dict(shown.details),
        finish_reasons=acc.finish_reasons(), usage=acc.usage, source=acc,
    )


def give_up(
    state: StreamState, st: StreamedResponse, checked: CheckedRequest, rt: Runtime, reason: str, detail: str
) -> bytes:
    """Release every withheld byte unchanged, then the "unavailable" verdict."""
    shown = skip(state, rt, checked.route, checked.decision.name, reason, detail)
    return release_pending(st) + _verdict_events(st, shown, 0)


def release_pending(st: StreamedResponse) -> bytes:
    """Everything received and not yet forwarded, unchanged (failure containment too)."""
    st.finished = True
    out = bytes(st.pending)
    st.pending.clear()
    return out


def _verdict_events(st: StreamedResponse, shown: Presentation, n_answers: int) -> bytes:
    """What follows answer content that already went out: the warning (it can only follow
    the content now), the verdict chunk, and the refusal (too late to withhold, but the client
    learns of it)."""
    meta = st.accumulator.meta
    out = bytearray()
    if shown.warning is not None:
        note = "\n\n" + shown.warning.text.strip()
        deltas = {i: note for i in range(n_answers) if shown.warns(i)}
        if deltas:
            out += openai_body.chunk_event(meta, deltas=deltas)
    out += openai_body.chunk_event(meta, details=dict(shown.details))
    if shown.refusal is not None:
        out += _refusal_event(shown)
    return bytes(out)


def _refusal_event(shown: Presentation) -> bytes:
    refusal = shown.refusal
    assert refusal is not None
    return openai_body.error_event(refusal.status, refusal.message, refusal.error_type, refusal.code)


def _forwarded(st: StreamedResponse, raw: bytes) -> None:
    # Every event's raw bytes are exactly the bytes received (sse.py guarantees it), so the
    # released prefix of ``pending`` is exactly this event.
    del st.pending[: len(raw)]


def _json_object(data: str) -> dict[str, Any]:
    value = json.loads(data)
    if not isinstance(value, dict):
        raise openai_body.BodyError("bad_response", "an SSE event's data is not a JSON object")
    return value


def _reply(received: bytes, out: bytes | bytearray) -> pb.ProcessingResponse:
    if out == received:
        return mutations.passthrough("response_body")  # cheapest: nothing to mutate
    return mutations.chunk_reply("response_body", bytes(out))
