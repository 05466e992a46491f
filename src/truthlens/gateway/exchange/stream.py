"""One ext_proc exchange: legal phase order, the pinned config snapshot, dispatch to the phases,
and the reply that stands in for a phase that failed.

Envoy sends, per HTTP exchange: request headers, request body chunk(s), request trailers,
response headers, response body chunk(s), response trailers, in that order (any may be
absent). A message out of order is a protocol error: it is answered unchanged and the rest of
the exchange is passed through unchecked.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Literal

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.core import errors
from truthlens.gateway.core.telemetry import EXT_PROC_PHASES
from truthlens.gateway.exchange import mutations, request_id
from truthlens.gateway.exchange.phases import (
    overloaded,
    request_body,
    request_headers,
    response_buffered,
    response_headers,
    response_progressive,
    response_stream,
    unchecked_body,
)
from truthlens.gateway.exchange.phases.check import skip
from truthlens.gateway.exchange.phases.state import CheckedRequest, Runtime, StreamState
from truthlens.gateway.policy.presentation import unchecked

MessageKind = Literal[
    "request_headers",
    "request_body",
    "request_trailers",
    "response_headers",
    "response_body",
    "response_trailers",
]
_RANK: dict[str, int] = {kind: rank for rank, kind in enumerate(EXT_PROC_PHASES)}
_REPEATABLE = frozenset({"request_body", "response_body"})
# Replies that can still replace the exchange with an error (nothing has gone to the client).
_REFUSABLE = frozenset({"request_body", "response_headers", "response_body"})
_PROPAGATOR = TraceContextTextMapPropagator()
_log = logging.getLogger(__name__)


@functools.cache
def _tracer(provider: Any) -> trace.Tracer:
    return trace.get_tracer("truthlens.extproc", tracer_provider=provider)


class ProtocolError(Exception):
    """Envoy sent a message this exchange cannot accept here."""

    reason = "internal"


class Stream:
    """State machine of one ``Process`` call. Not shared between calls."""

    def __init__(self, runtime: Runtime, *, overloaded: bool = False) -> None:
        self._rt = runtime
        # Over the worker's stream cap: nothing of this exchange is checked (phases.overloaded).
        self.overloaded = overloaded
        self._rank = -1
        self._last: str | None = None
        self._state: StreamState | None = None
        # Known from the request headers: no check will run (phase_plan). Such an exchange is
        # not traced, and its request body only loses the context field.
        self._unchecked = False
        # The check the request phase prepared (kept for the fallback: phases clear
        # ``state.checked`` as the check begins).
        self._checked: CheckedRequest | None = None
        self._awaits_body = False  # a response body was asked for and has not ended

    @property
    def state(self) -> StreamState | None:
        return self._state

    @property
    def ends_call(self) -> bool:
        """The last message needs no reply: the call ends instead, and Envoy lets the rest of
        the exchange through unprocessed (``phases.response_buffered.over_buffer``)."""
        return self._state is not None and self._state.end_call

    async def handle(self, msg: pb.ProcessingRequest) -> pb.ProcessingResponse | list[pb.ProcessingResponse] | None:
        """The reply to ``msg``; ``None`` in observability mode (Envoy ignores replies); on a
        progressive stream, the replies it lets go (maybe none yet, maybe earlier chunks' too)."""
        kind = msg.WhichOneof("request")
        if kind is None:
            raise ProtocolError("a ProcessingRequest without a request message")
        self._rt.telemetry.record_message(kind)
        state = self._begin(msg, kind)
        if kind == "request_headers":
            reply, needs = request_headers.handle(state, msg)
            if self.overloaded:  # a fail-closed route its headers decide is refused now
                reply = overloaded.refuse_early(state) or reply
            self._unchecked = needs.unchecked
            if not needs.unchecked:
                info = state.info
                assert info is not None
                state.span = self._start_span(info.traceparent, info.headers.get("tracestate"))
                state.span.set_attribute("http.path", info.path)
        elif kind == "response_body" and state.streamed is not None and state.streamed.progressive is not None:
            return await self._progressive(state, msg)
        elif state.span is None:
            reply = await self._dispatch(state, msg, kind)
        else:
            # The exchange span is current only while one message is handled: a gRPC stream's
            # messages may run in different contexts, and a context attached in one cannot be
            # detached in another.
            with trace.use_span(state.span, end_on_exit=False):
                reply = await self._dispatch(state, msg, kind)
        return None if msg.observability_mode else reply

    async def _dispatch(self, state: StreamState, msg: pb.ProcessingRequest, kind: str) -> pb.ProcessingResponse:
        if self.overloaded:
            return overloaded.handle(state, msg, kind)
        if kind == "request_body":
            if self._unchecked:
                return unchecked_body.handle(state, msg)
            reply = await request_body.handle(state, msg, self._rt)
            # A check prepared, and the request sent on (not refused here): its answer is awaited.
            self._checked = state.checked if not reply.HasField("immediate_response") else None
        elif kind == "response_headers":
            reply = response_headers.handle(state, msg, self._rt)
            # Whether Envoy will send the body: an exchange whose call ends before the body's
            # end was cut off (see :meth:`close`).
            self._awaits_body = (not msg.response_headers.end_of_stream and reply.HasField("mode_override")
                                 and reply.mode_override.response_body_mode != pb.ProcessingMode.NONE)
        elif kind == "response_body":
            self._awaits_body = self._awaits_body and not msg.response_body.end_of_stream
            # The response headers phase chose the body's form: one buffered JSON message, or
            # SSE chunks that each need an answer.
            if state.streamed is not None:
                reply = await response_stream.handle(state, msg, self._rt)
            else:
                reply = await response_buffered.handle(state, msg, self._rt)
        else:
            reply = mutations.passthrough(kind)  # type: ignore[arg-type]
        request_id.echo(reply, msg, state.info.headers.get(request_id.REQUEST_ID_HEADER) if state.info else None)
        return reply

    async def _progressive(self, state: StreamState, msg: pb.ProcessingRequest) -> list[pb.ProcessingResponse] | None:
        """A progressive stream's chunk (``phases.response_progressive``): its replies wait for
        the sentences their bytes hold."""
        # The body's end arrived: a call that ends now was not cut off (see :meth:`close`).
        self._awaits_body = self._awaits_body and not msg.response_body.end_of_stream
        if self.overloaded or msg.observability_mode:
            return None if msg.observability_mode else [overloaded.handle(state, msg, "response_body")]
        if state.span is None:
            return await response_progressive.handle(state, msg, self._rt)
        with trace.use_span(state.span, end_on_exit=False):
            return await response_progressive.handle(state, msg, self._rt)

    def _start_span(self, traceparent: str | None, tracestate: str | None) -> Any:
        """The exchange's span, a child of the client's W3C trace; ended by :meth:`close`."""
        carrier = {}
        if traceparent:
            carrier["traceparent"] = traceparent
            if tracestate:
                carrier["tracestate"] = tracestate
        return _tracer(self._rt.telemetry.tracer_provider).start_span(
            "truthlens.exchange", context=_PROPAGATOR.extract(carrier), kind=trace.SpanKind.SERVER
        )

    def fallback(
        self, msg: pb.ProcessingRequest, exc: BaseException
    ) -> pb.ProcessingResponse | list[pb.ProcessingResponse] | None:
        """The reply when handling ``msg`` raised: one policy for every phase. A fail-closed
        route's refusal, never the bytes; on a fail-open route the message unchanged, and a
        response body marked unavailable with the exception's reason (a stream releases every
        withheld byte in order, with that verdict). The rest of the exchange passes through."""
        kind = msg.WhichOneof("request")
        if kind is None or msg.observability_mode:
            return None
        state = self._state
        if state is None:
            return mutations.passthrough(kind)
        # The check the route asked for, even once a phase has begun it (state.checked is
        # cleared as a check starts, so that it runs at most once).
        checked = state.checked or self._checked
        state.checked = None
        reason = errors.reason_for_exception(exc)
        try:
            if kind == "response_body" and state.streamed is not None and state.streamed.progressive is not None:
                return response_progressive.contain(state, state.streamed, self._rt, checked, reason)
            if kind == "response_body" and state.streamed is not None:
                return response_stream.contain(state, state.streamed, self._rt, checked, reason,
                                               msg.response_body.body)
            if kind == "response_body" and checked is not None:
                return response_buffered.contain(state, self._rt, checked, reason, msg.response_body)
        except Exception:  # the containment itself failed: the policy still holds
            _log.exception("ext_proc %s: the fallback reply failed too", kind)
        if checked is not None and checked.route.fail_policy == "closed" and kind in _REFUSABLE:
            refusal = unchecked(checked.route, checked.decision.name, reason).refusal
            if refusal is not None:
                return mutations.refusal_response(state.api, refusal)
        return mutations.passthrough(kind)

    def close(self) -> None:
        if self._state is not None:
            if self._checked is not None and self._rank < _RANK["response_headers"]:
                self._no_answer(self._state, self._checked)
            elif self._awaits_body and not self._state.end_call and self._checked is not None:
                self._cut_off(self._state, self._checked)
            self._state.lease.release()
            if self._state.span is not None:
                self._state.span.end()

    def _cut_off(self, state: StreamState, checked: CheckedRequest) -> None:
        """The call ended before the answer's body did: the upstream reset or cut its connection
        (Envoy answers a held one with its own 502, named by envoy.yaml's local reply; a
        passthrough stream just stops). Recorded once, as ``upstream_reset``, unless the answer
        had already been judged in full or refused. Envoy does not tell which side went away: a
        client that disconnects mid-answer is recorded the same way."""
        st = state.streamed
        if st is not None and (st.refused or (st.finished and st.done_seen)):
            return
        skip(state, self._rt, checked.route, checked.decision.name, errors.UPSTREAM_RESET,
             "the answer ended before its end (the upstream's connection was reset or cut)", upstream=True)

    def _no_answer(self, state: StreamState, checked: CheckedRequest) -> None:
        """The call ended after a checked request went upstream and before any answer reached
        the processor: the upstream reset, refused or timed out (Envoy answers the client with
        its own 502/503/504, which never passes the processor), or the client went away first
        (Envoy does not say which). Recorded once, as ``upstream_reset``, so that every checked
        exchange has its audit line."""
        skip(state, self._rt, checked.route, checked.decision.name, errors.UPSTREAM_RESET,
             "the exchange ended before the answer's headers (the upstream's connection was reset or failed, "
             "or the client went away)", upstream=True)

    def _begin(self, msg: pb.ProcessingRequest, kind: str) -> StreamState:
        rank = _RANK[kind]
        if rank < self._rank or (rank == self._rank and kind not in _REPEATABLE):
            raise ProtocolError(f"{kind} after {self._last}")
        self._rank, self._last = rank, kind
        if self._state is None:
            # Pinned for the whole exchange: a config reload never changes a running exchange,
            # and the services of that config stay open until the exchange ends.
            config = self._rt.config.current
            self._state = StreamState(config=config, lease=self._rt.services.acquire(config))
        return self._state
