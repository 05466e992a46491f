"""Response body (SSE): answer every chunk in order, release only whole events, and put the
verdict before the event that ends the answer (chat: ``data: [DONE]``; Responses:
``response.completed``). What the events mean and the bytes that replace them are the
endpoint's (``state.streamed.codec``, :mod:`truthlens.gateway.apis.endpoints`); this module keeps the
bytes: every byte received and not released is in ``pending``, released in order.

``passthrough`` forwards each whole event at once and checks the accumulated answer at the end;
``hold`` has Envoy buffer the stream (so Envoy, not the processor, keeps the bytes: a processor
that goes away loses nothing), checks it, and sends the final (possibly rewritten) answer
re-chunked in one reply that also carries the verdict's headers. Broken framing or a truncated
stream releases what arrived, unchanged, with an "unavailable" verdict: nothing is lost and
nothing hangs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis import sse
from truthlens.gateway.apis.interface import BodyError
from truthlens.gateway.exchange import mutations, ungrounded
from truthlens.gateway.exchange.phases.check import check_verdict, skip
from truthlens.gateway.exchange.phases.response_buffered import over_buffer
from truthlens.gateway.exchange.phases.state import CheckedRequest, Runtime, StreamedResponse, StreamState
from truthlens.gateway.policy.presentation import final_headers

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Presentation
    from truthlens.modes.base import Verdict


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    st = state.streamed
    checked = state.checked
    assert st is not None
    chunk = msg.response_body
    if st.refused:
        return mutations.chunk_reply("response_body", b"")  # closed means closed: nothing after the refusal
    if st.finished:
        if st.past_end:
            return _after_end_chunk(st, chunk.body, chunk.end_of_stream)
        if st.scrub_rest:
            return _scrub_only(st, chunk.body, chunk.end_of_stream)
        return mutations.passthrough("response_body")
    if checked is None:
        return _scrub_only(st, chunk.body, chunk.end_of_stream)
    if st.buffered and not chunk.end_of_stream:
        # Over Envoy's buffer. Nothing has reached the client yet (Envoy holds the headers with
        # the body): a fail-closed route answers an explicit error instead of the unchecked
        # answer. Otherwise the rest flows through unprocessed, so this part goes on unchanged
        # with the provisional headers (no reply: the call ends, see over_buffer).
        st.finished = True
        shown = skip(state, rt, checked.route, checked.decision.name, "too_large",
                     "the held stream is larger than Envoy buffers", upstream=True)
        if shown.refusal is not None:
            return mutations.refusal_response(state.api, shown.refusal)
        return over_buffer(state)
    st.received += len(chunk.body)
    if st.buffered and st.received > checked.route.max_body_bytes:
        st.pending += chunk.body
        released = give_up(state, st, checked, rt, "too_large", "the stream is over the route's max_body_bytes")
        return _reply(st, chunk.body, released)
    st.pending += chunk.body
    # A passthrough stream is read (and its answer kept) only up to the route's limit: the chunk
    # that crosses it is not read either, even when it ends the answer, so whether a stream over
    # the limit is checked never depends on where Envoy cut its chunks.
    over = st.received > checked.route.max_body_bytes
    out = bytearray()
    try:
        events = _feed(st, chunk.body, chunk.end_of_stream)
    except sse.SSEError as exc:
        return _reply(st, chunk.body, give_up(state, st, checked, rt, exc.reason, str(exc), read_rest=False))
    if not events and not over and not chunk.end_of_stream:
        # A chunk that completes no event (an upstream writing a byte at a time sends thousands):
        # its bytes wait in ``pending`` with the event they begin; nothing to read or release yet.
        return _reply(st, chunk.body, b"")
    try:
        if not over:
            await _consume(state, st, checked, rt, events, out, chunk.end_of_stream)
    except Exception:
        # A bug: hand what was built back to ``pending`` so the service's fallback releases
        # every byte in order.
        st.pending[:0] = out
        raise
    if over:
        # The rest flows unchanged but for verdicts the upstream wrote, marked unavailable.
        out += give_up(state, st, checked, rt, "too_large",
                       f"the stream is over the route's max_body_bytes ({checked.route.max_body_bytes})")
    if chunk.end_of_stream and not st.finished:
        out += give_up(state, st, checked, rt, "sse_framing", "the stream ended before the answer did "
                        "(no data: [DONE], no response.completed)")
    return _reply(st, chunk.body, out)


async def _consume(
    state: StreamState,
    st: StreamedResponse,
    checked: CheckedRequest,
    rt: Runtime,
    events: list[sse.SSEEvent],
    out: bytearray,
    end_of_stream: bool,
) -> None:
    """Feed whole events to the endpoint's codec; append the bytes to release now to ``out``.
    The answer ends with the event that ends it (chat: ``data: [DONE]``), or with the stream
    once the codec says the answer is complete (Responses: a terminal event was seen)."""
    codec = st.codec
    after: list[sse.SSEEvent] = []  # the events after the one that ended the answer
    for i, event in enumerate(events):
        try:
            ends = codec.add(event)
        except (BodyError, ValueError) as exc:
            # Unreadable event: release it and everything withheld, then say why.
            out += give_up(state, st, checked, rt, getattr(exc, "reason", "sse_framing"), str(exc))
            return
        if ends:
            st.done_seen = True
            # The withheld events (hold: the whole answer; passthrough: none, or a Responses
            # message's done events on) and the one that ended the answer are replaced by what
            # the codec renders; ``pending`` is trimmed only once the replacement exists.
            tail = sum(len(e.raw) for e in events[i + 1 :]) + st.decoder.pending_bytes
            withheld = len(st.pending) - tail
            before_end = bytes(st.pending[: withheld - len(event.raw)])
            replacement = await _finish(state, st, checked, rt, before_end, event)
            del st.pending[:withheld]
            out += replacement
            st.past_end = True
            after = events[i + 1 :]
            break
        if st.strategy == "passthrough" and not codec.holding:
            out += event.raw
            _forwarded(st, event.raw)
    if end_of_stream and not st.finished and codec.answer_complete:
        st.done_seen = True
        # The decoder was flushed: every byte left is withheld.
        replacement = await _finish(state, st, checked, rt, bytes(st.pending), None)
        st.pending.clear()
        out += replacement
    if st.finished:
        # Whatever follows the end of the answer is not part of it (:func:`after_end`). The
        # event left open is withheld until it ends.
        open_event = _detach_open_event(st)
        out += after_end(st, after) if st.past_end else st.pending
        st.pending[:] = open_event
        st.scrub_rest = True


def after_end(st: StreamedResponse, events: list[sse.SSEEvent]) -> bytes:
    """What goes on of the events after the one that ended the answer (chat: ``data: [DONE]``):
    they are not part of the answer, and the verdict before the end did not read them, so no
    data event among them reaches the client (one that reads past ``[DONE]`` finds no text
    nor a verdict the check never saw); comments and blank blocks go on, and on a fail-closed
    route nothing does."""
    if st.closed_after_end:
        return b""
    return b"".join(e.raw for e in events if not e.has_data)


def _after_end_chunk(st: StreamedResponse, body: bytes, end_of_stream: bool) -> pb.ProcessingResponse:
    """A chunk after the answer's end: only what :func:`after_end` lets go (an event still open
    is withheld until it ends; bytes that do not frame are dropped with it)."""
    if st.closed_after_end:
        return mutations.chunk_reply("response_body", b"")
    st.pending += body
    try:
        events = _feed(st, body, end_of_stream)
    except sse.SSEError:
        st.decoder.drain()
        st.pending.clear()
        return mutations.chunk_reply("response_body", b"")
    del st.pending[: len(st.pending) - st.decoder.pending_bytes]
    return _reply(st, body, after_end(st, events))


def _detach_open_event(st: StreamedResponse) -> bytes:
    """Remove and return the bytes of the event the decoder still has open (the end of
    ``pending``), so only whole events are released and the decoder stays in step."""
    open_bytes = st.decoder.pending_bytes
    if not open_bytes:
        return b""
    tail = bytes(st.pending[-open_bytes:])
    del st.pending[-open_bytes:]
    return tail


async def _finish(
    state: StreamState, st: StreamedResponse, checked: CheckedRequest, rt: Runtime, withheld: bytes,
    end: sse.SSEEvent | None,
) -> bytes:
    """Check the accumulated answer; return what replaces the ``withheld`` events and ``end``.
    The stream is finished once the replacement exists: a failure before that is contained
    (:func:`contain`) as the route says, never by releasing the withheld bytes unchecked."""
    _verdict, shown = await judge(state, checked, rt, st.codec.answers())
    st.shown = shown
    st.closed_after_end = checked.route.fail_policy == "closed"
    replacement = st.codec.finish(shown, withheld, end)
    st.finished = True
    return replacement


async def judge(
    state: StreamState, checked: CheckedRequest, rt: Runtime, answers: tuple[str, ...]
) -> tuple[Verdict | None, Presentation]:
    """The whole answer's verdict (None: no check ran) and presentation, the same on every
    streamed route: no answer is ``unavailable``/``no_choices``, answers with no text are
    ``skipped``/``no_text`` (never clean), anything else is checked by the route's mode."""
    if not answers:
        return None, skip(state, rt, checked.route, checked.decision.name, "no_choices", upstream=True)
    if not any(a.strip() for a in answers):
        return None, ungrounded.skip(state, rt, checked.route, checked.decision.name, ungrounded.NO_TEXT_REASON)
    return await check_verdict(state, checked, rt, answers)


def give_up(
    state: StreamState, st: StreamedResponse, checked: CheckedRequest, rt: Runtime, reason: str, detail: str,
    *, read_rest: bool = True,
) -> bytes:
    """Release every withheld byte unchanged with the "unavailable" verdict: before the event
    that ends the answer among them, never inside an event the upstream left open. With
    ``read_rest`` (the events still frame) that open event stays withheld until it ends and the
    rest of the stream is still read as it flows on, for a verdict the upstream wrote (dropped);
    without it (the framing broke) the open event's bytes follow the verdict and the rest flows
    through unread. At the end of the stream an open event is closed with a blank line before
    the verdict."""
    shown = skip(state, rt, checked.route, checked.decision.name, reason, detail, upstream=True)
    st.shown = shown
    if shown.refusal is not None:
        # Closed means closed: the refusal replaces every withheld byte (a held answer: all of
        # it), and nothing of the upstream's goes out after it. What a passthrough stream
        # already sent stays; its verdict chunk then says why the refusal came.
        release_pending(st)
        st.decoder.drain()
        st.refused = True
        if st.buffered:
            return st.codec.refusal_events(shown.refusal)
        return (b"\n\n" if st.tail_open else b"") + st.codec.unchecked_events(shown)
    tail = _detach_open_event(st)
    released = place_verdict(release_pending(st), st.codec.unchecked_events(shown), st.codec.ends_answer,
                             tail_open=st.tail_open)
    if read_rest:
        st.pending += tail  # the decoder keeps reading it, so the events after it stay in step
        st.scrub_rest = True
        return released
    st.decoder.drain()
    return released + tail


def contain(
    state: StreamState, st: StreamedResponse, rt: Runtime, checked: CheckedRequest | None, reason: str,
    received: bytes,
) -> pb.ProcessingResponse:
    """The reply to a chunk whose handling raised (a bug: unreadable data is handled above),
    as the route says: fail-closed, the refusal instead of every withheld byte; fail-open, the
    withheld bytes in order with the "unavailable" verdict and ``reason``. A stream with no
    check (left) releases what it withheld."""
    if st.refused:
        return mutations.chunk_reply("response_body", b"")
    if st.past_end and st.closed_after_end:
        return mutations.chunk_reply("response_body", b"")
    if checked is None or st.finished:
        st.scrub_rest = False  # the reading failed: stop looking, let the rest through
        st.decoder.drain()
        return _reply(st, received, release_pending(st))
    return _reply(st, received, give_up(state, st, checked, rt, reason,
                                        "the gateway failed while reading the stream"))


def place_verdict(
    released: bytes, verdict: bytes, ends_answer: Callable[[sse.SSEEvent], bool], *, tail_open: bool = False
) -> bytes:
    """``released`` with ``verdict`` before its first event that ends an answer, else after it,
    and then after a blank line when ``released`` ends inside an event (``tail_open``: the bytes
    already sent did, when ``released`` is empty)."""
    try:
        decoder = sse.SSEDecoder(max_event_bytes=len(released) + 1)
        events = decoder.feed(released) + decoder.flush()
    except sse.SSEError:
        events = [sse.SSEEvent("", None, None, released, has_data=False)]
    out = bytearray()
    for event in events:
        if verdict and ends_answer(event):
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


def _feed(st: StreamedResponse, body: bytes, end_of_stream: bool) -> list[sse.SSEEvent]:
    """The whole events ``body`` completes, less any verdict the upstream wrote (its bytes leave
    ``pending`` too: the verdict is the gateway's alone)."""
    events = st.decoder.feed(body)
    if end_of_stream:
        events += st.decoder.flush()
    scrubbed = [st.codec.scrub(e) for e in events]
    if all(s is e for s, e in zip(scrubbed, events, strict=True)):
        return events
    # ``pending`` is what was withheld before, these events' bytes, then the decoder's unfinished rest.
    n_rest = st.decoder.pending_bytes
    rest = bytes(st.pending[len(st.pending) - n_rest :]) if n_rest else b""
    before = len(st.pending) - n_rest - sum(len(e.raw) for e in events)
    kept = [e for e in scrubbed if e is not None]
    st.pending[before:] = b"".join(e.raw for e in kept) + rest
    return kept


def _scrub_only(st: StreamedResponse, body: bytes, end_of_stream: bool) -> pb.ProcessingResponse:
    """An unchecked stream: every whole event goes on unchanged but a verdict the upstream
    wrote; broken framing releases everything and stops looking."""
    st.pending += body
    try:
        events = _feed(st, body, end_of_stream)
    except sse.SSEError:
        # Stop looking for good: past a route's limit too (``scrub_rest``), where the decoder
        # would otherwise keep every later byte of an event that never ends.
        st.scrub_rest = False
        st.decoder.drain()
        return _reply(st, body, release_pending(st))
    out = b"".join(e.raw for e in events)
    del st.pending[: len(out)]
    return _reply(st, body, out)


def _forwarded(st: StreamedResponse, raw: bytes) -> None:
    # Every event's raw bytes are exactly the bytes received (sse.py guarantees it), so the
    # released prefix of ``pending`` is exactly this event.
    del st.pending[: len(raw)]
    st.tail_open = not sse.ends_event(raw)


def _reply(st: StreamedResponse, received: bytes, out: bytes | bytearray) -> pb.ProcessingResponse:
    if st.buffered:
        # The one message of a held stream: the verdict's headers replace the provisional ones.
        headers, remove = final_headers(st.shown.headers if st.shown is not None else {})
        return mutations.body_reply("response_body", body=bytes(out), set_headers=headers, remove=remove)
    if out == received:
        return mutations.passthrough("response_body")  # cheapest: nothing to mutate
    return mutations.chunk_reply("response_body", bytes(out))
