"""Response body (SSE): answer every chunk in order, release only whole events, and put the
verdict before ``data: [DONE]``.

``passthrough`` forwards each whole event at once and checks the accumulated answer at the end;
``hold`` has Envoy buffer the stream (so Envoy, not the processor, keeps the bytes: a processor
that goes away loses nothing), checks it, and sends the final (possibly rewritten) answer
re-chunked in one reply that also carries the verdict's headers. Broken framing or a truncated
stream releases what arrived, unchanged, with an "unavailable" verdict: nothing is lost and
nothing hangs.
"""

from __future__ import annotations

import json
from typing import Any

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway import mutations, openai_body, sse
from truthlens.gateway.phases.check import check, skip
from truthlens.gateway.phases.response_buffered import over_buffer
from truthlens.gateway.phases.state import CheckedRequest, Runtime, StreamedResponse, StreamState
from truthlens.gateway.presentation import Presentation, final_headers


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    st = state.streamed
    checked = state.checked
    assert st is not None
    chunk = msg.response_body
    if st.finished:
        return mutations.passthrough("response_body")
    if checked is None:
        return _scrub_only(st, chunk.body, chunk.end_of_stream)
    if st.buffered and not chunk.end_of_stream:
        # Over Envoy's buffer: the rest flows through unprocessed, so this part goes on
        # unchanged with the provisional headers (no reply: the call ends, see over_buffer).
        st.finished = True
        skip(state, rt, checked.route, checked.decision.name, "too_large", upstream=True)
        return over_buffer(state)
    if st.buffered and len(chunk.body) > checked.route.max_body_bytes:
        st.pending += chunk.body
        released = give_up(state, st, checked, rt, "too_large", "the stream is over the route's max_body_bytes")
        return _reply(st, chunk.body, released)
    st.pending += chunk.body
    out = bytearray()
    try:
        events = _feed(st, chunk.body, chunk.end_of_stream)
    except sse.SSEError as exc:
        return _reply(st, chunk.body, give_up(state, st, checked, rt, exc.reason, str(exc)))
    try:
        await _consume(state, st, checked, rt, events, out)
    except Exception:
        # A bug: hand what was built back to ``pending`` so the service's fallback releases
        # every byte in order.
        st.pending[:0] = out
        raise
    if chunk.end_of_stream and not st.finished:
        out += give_up(state, st, checked, rt, "sse_framing", "the stream ended without data: [DONE]")
    return _reply(st, chunk.body, out)


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
                replacement = await _finish(state, st, checked, rt, before_done, event.raw)
                del st.pending[:withheld]
                out += replacement
            else:
                out += await _finish(state, st, checked, rt, b"", b"")
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
    state: StreamState, st: StreamedResponse, checked: CheckedRequest, rt: Runtime, withheld: bytes, done: bytes
) -> bytes:
    """Check the accumulated answer. Passthrough: return the bytes that go before ``[DONE]``;
    hold: return what replaces the held events (``withheld``) and their ``[DONE]`` (``done``)."""
    st.finished = True
    answers = tuple(st.accumulator.contents())
    if not answers:
        shown = skip(state, rt, checked.route, checked.decision.name, "no_choices", upstream=True)
    else:
        shown = await check(state, checked, rt, answers)
    st.shown = shown
    if st.strategy == "passthrough":
        return _verdict_events(st, shown, len(answers))
    if shown.refusal is not None:
        return _refusal_event(shown)
    if shown.outcome == "unchecked":
        # Not checked (no choices, a drain): the held events go out as they came.
        return withheld + _verdict_events(st, shown, 0) + done
    acc = st.accumulator
    return openai_body.rechunk(
        acc.meta, shown.final_contents(answers), dict(shown.details),
        finish_reasons=acc.finish_reasons(), usage=acc.usage, source=acc,
    )


def give_up(
    state: StreamState, st: StreamedResponse, checked: CheckedRequest, rt: Runtime, reason: str, detail: str
) -> bytes:
    """Release every withheld byte unchanged with the "unavailable" verdict: before a
    ``[DONE]`` among them, never glued onto an event the upstream left unterminated."""
    shown = skip(state, rt, checked.route, checked.decision.name, reason, detail, upstream=True)
    st.shown = shown
    if st.buffered and shown.refusal is not None:
        # Nothing has reached the client yet: the refusal replaces the held answer.
        release_pending(st)
        return _refusal_event(shown)
    return place_verdict(release_pending(st), _verdict_events(st, shown, 0), tail_open=st.tail_open)


def place_verdict(released: bytes, verdict: bytes, *, tail_open: bool = False) -> bytes:
    """``released`` with ``verdict`` before its first ``[DONE]`` event, else after it, and
    then after a blank line when ``released`` ends inside an event (``tail_open``: the bytes
    already sent did, when ``released`` is empty)."""
    try:
        decoder = sse.SSEDecoder(max_event_bytes=len(released) + 1)
        events = decoder.feed(released) + decoder.flush()
    except sse.SSEError:
        events = [sse.SSEEvent("", None, None, released, has_data=False)]
    out = bytearray()
    for event in events:
        if verdict and event.is_done:
            out += verdict
            verdict = b""
        out += event.raw
    if verdict:
        if (out and not sse.ends_event(bytes(out))) or (not out and tail_open):
            out += b"\n\n"
        out += verdict
    return bytes(out)


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


def _feed(st: StreamedResponse, body: bytes, end_of_stream: bool) -> list[sse.SSEEvent]:
    """The whole events ``body`` completes, less any verdict chunk the upstream wrote (its
    bytes leave ``pending`` too: the verdict is the gateway's alone)."""
    events = st.decoder.feed(body)
    if end_of_stream:
        events += st.decoder.flush()
    if not any(_spoofed(e) for e in events):
        return events
    # ``pending`` is exactly these events' bytes followed by the decoder's unfinished rest.
    rest = bytes(st.pending[len(st.pending) - st.decoder.pending_bytes :]) if st.decoder.pending_bytes else b""
    kept = [e for e in events if not _spoofed(e)]
    st.pending[:] = b"".join(e.raw for e in kept) + rest
    return kept


def _spoofed(event: sse.SSEEvent) -> bool:
    if not event.has_data or f'"{openai_body.DETAILS_FIELD}"' not in event.data:
        return False
    try:
        value = json.loads(event.data)
    except ValueError:
        return False
    return isinstance(value, dict) and openai_body.DETAILS_FIELD in value


def _scrub_only(st: StreamedResponse, body: bytes, end_of_stream: bool) -> pb.ProcessingResponse:
    """An unchecked stream: every whole event goes on unchanged but a verdict chunk the
    upstream wrote; broken framing releases everything and stops looking."""
    st.pending += body
    try:
        events = _feed(st, body, end_of_stream)
    except sse.SSEError:
        return _reply(st, body, release_pending(st))
    out = b"".join(e.raw for e in events)
    del st.pending[: len(out)]
    return _reply(st, body, out)


def _forwarded(st: StreamedResponse, raw: bytes) -> None:
    # Every event's raw bytes are exactly the bytes received (sse.py guarantees it), so the
    # released prefix of ``pending`` is exactly this event.
    del st.pending[: len(raw)]
    st.tail_open = not sse.ends_event(raw)


def _json_object(data: str) -> dict[str, Any]:
    value = json.loads(data)
    if not isinstance(value, dict):
        raise openai_body.BodyError("bad_response", "an SSE event's data is not a JSON object")
    return value


def _reply(st: StreamedResponse, received: bytes, out: bytes | bytearray) -> pb.ProcessingResponse:
    if st.buffered:
        # The one message of a held stream: the verdict's headers replace the provisional ones.
        headers, remove = final_headers(st.shown.headers if st.shown is not None else {})
        return mutations.body_reply("response_body", body=bytes(out), set_headers=headers, remove=remove)
    if out == received:
        return mutations.passthrough("response_body")  # cheapest: nothing to mutate
    return mutations.chunk_reply("response_body", bytes(out))
