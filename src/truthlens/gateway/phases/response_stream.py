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

from truthlens.gateway import errors, mutations, openai_body, sse
from truthlens.gateway.phases.check import check
from truthlens.gateway.phases.outcome import BLOCK_MESSAGE, BLOCK_STATUS, details
from truthlens.gateway.phases.state import CheckedRequest, Runtime, StreamedResponse, StreamState
from truthlens.gateway.checking import verdict_reason
from truthlens._proto import truthlens_ext_proc_pb2 as pb


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
        return mutations.chunk_reply("response_body", give_up(st, checked, rt, exc.reason, str(exc)))
    try:
        await _consume(st, checked, rt, events, out, state.span)
    except Exception:
        # A bug: hand what was built back to ``pending`` so the service's fallback releases
        # every byte in order.
        st.pending[:0] = out
        raise
    if chunk.end_of_stream and not st.finished:
        out += give_up(st, checked, rt, "sse_framing", "the stream ended without data: [DONE]")
    return _reply(chunk.body, out)


async def _consume(
    st: StreamedResponse,
    checked: CheckedRequest,
    rt: Runtime,
    events: list[sse.SSEEvent],
    out: bytearray,
    span: Any,
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
                replacement = await _finish(st, checked, rt, before_done, span)
                del st.pending[:withheld]
                out += replacement
            else:
                out += await _finish(st, checked, rt, b"", span)
                out += event.raw
                _forwarded(st, event.raw)
            break
        if event.has_data:
            try:
                st.accumulator.add(_json_object(event.data))
            except (openai_body.BodyError, ValueError) as exc:
                # Unreadable event: release it and everything withheld, then say why.
                out += give_up(st, checked, rt, getattr(exc, "reason", "sse_framing"), str(exc))
                return
        if st.strategy == "passthrough":
            out += event.raw
            _forwarded(st, event.raw)
    if st.finished:
        # Whatever follows [DONE] is not part of the answer: it flows unchanged from here on.
        out += st.pending
        st.pending.clear()


async def _finish(
    st: StreamedResponse, checked: CheckedRequest, rt: Runtime, withheld: bytes, span: Any
) -> bytes:
    """Check the accumulated answer. Passthrough: return the bytes that go before ``[DONE]``;
    hold: return what replaces the held events (``withheld``) and their ``[DONE]``."""
    st.finished = True
    answers = tuple(st.accumulator.contents())
    policy = checked.policy
    meta = st.accumulator.meta
    if not answers:
        verdict_chunk = _unavailable_chunk(st, checked, rt, "no_choices", None)
        if st.strategy == "hold":
            return withheld + verdict_chunk + sse.DONE_EVENT
        return verdict_chunk
    verdict, shown = await check(checked, rt, answers, span)
    info = details(checked.decision.name, verdict, include_spans=checked.include_spans)
    refusal = None
    if shown.block:
        refusal = _error_event(None)
    elif verdict.status == "unavailable" and policy.fail_policy == "closed":
        refusal = _error_event(verdict_reason(verdict) or "mode_error")
    if st.strategy == "passthrough":
        out = bytearray()
        if shown.warning is not None:
            # The content already went out: the warning can only follow it.
            note = "\n\n" + shown.warning.text.strip()
            out += openai_body.chunk_event(meta, deltas={i: note for i in range(len(answers))})
        out += openai_body.chunk_event(meta, details=info)
        if refusal is not None:
            out += refusal  # too late to withhold (passthrough), but the client learns of it
        return bytes(out)
    if refusal is not None:
        return refusal
    contents = list(answers)
    if shown.contents is not None:
        contents = [new if new is not None else old for new, old in zip(shown.contents, answers)]
    if shown.warning is not None:
        contents = [shown.warning.apply(c) for c in contents]
    acc = st.accumulator
    return openai_body.rechunk(
        meta, tuple(contents), info, finish_reasons=acc.finish_reasons(), usage=acc.usage, source=acc
    )


def give_up(st: StreamedResponse, checked: CheckedRequest, rt: Runtime, reason: str, detail: str) -> bytes:
    """Release every withheld byte unchanged, then an "unavailable" verdict chunk."""
    st.finished = True
    out = bytes(st.pending)
    st.pending.clear()
    return out + _unavailable_chunk(st, checked, rt, reason, detail)


def _unavailable_chunk(
    st: StreamedResponse, checked: CheckedRequest, rt: Runtime, reason: str, detail: str | None
) -> bytes:
    reason = errors.normalize_reason(reason)
    rt.telemetry.record_error(reason)
    info: dict[str, Any] = {
        "decision": checked.decision.name,
        "mode": checked.policy.mode,
        "status": "unavailable",
        "reason": reason,
    }
    if detail:
        info["message"] = detail
    return openai_body.chunk_event(st.accumulator.meta, details=info)


def release_pending(st: StreamedResponse) -> bytes:
    """For failure containment: everything received and not yet forwarded, unchanged."""
    st.finished = True
    out = bytes(st.pending)
    st.pending.clear()
    return out


def _error_event(unavailable_reason: str | None) -> bytes:
    """The SSE error a blocked answer (``None``) or an unchecked one on a fail-closed route ends with."""
    if unavailable_reason is None:
        return openai_body.error_event(BLOCK_STATUS, BLOCK_MESSAGE, "hallucination_detected", "hallucination_detected")
    outcome = errors.failure_outcome(unavailable_reason, "closed")
    return openai_body.error_event(outcome.status, outcome.message, "server_error", outcome.reason)


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
