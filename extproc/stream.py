"""One ext_proc exchange: legal phase order, the pinned config snapshot, dispatch to the phases,
and the reply that stands in for a phase that failed.

Envoy sends, per HTTP exchange: request headers, request body chunk(s), request trailers,
response headers, response body chunk(s), response trailers, in that order (any may be
absent). A message out of order is a protocol error: it is answered unchanged and the rest of
the exchange is passed through unchecked.
"""

from __future__ import annotations

import contextlib
from typing import Literal

from protos import truthlens_ext_proc_pb2 as pb

from extproc import errors, mutations
from extproc.phases import request_body, request_headers, response_body, response_headers
from extproc.phases.failures import reject
from extproc.phases.response_stream import release_pending
from extproc.phases.state import Runtime, StreamState

MessageKind = Literal[
    "request_headers",
    "request_body",
    "request_trailers",
    "response_headers",
    "response_body",
    "response_trailers",
]
_RANK: dict[str, int] = {
    "request_headers": 0,
    "request_body": 1,
    "request_trailers": 2,
    "response_headers": 3,
    "response_body": 4,
    "response_trailers": 5,
}
_REPEATABLE = frozenset({"request_body", "response_body"})


class ProtocolError(Exception):
    """Envoy sent a message this exchange cannot accept here."""

    reason = "internal"


class Stream:
    """State machine of one ``Process`` call. Not shared between calls."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._rank = -1
        self._last: str | None = None
        self._state: StreamState | None = None
        self._span = contextlib.ExitStack()

    @property
    def state(self) -> StreamState | None:
        return self._state

    async def handle(self, msg: pb.ProcessingRequest) -> pb.ProcessingResponse | None:
        """The reply to ``msg``; ``None`` in observability mode (Envoy ignores replies)."""
        kind = msg.WhichOneof("request")
        if kind is None:
            raise ProtocolError("a ProcessingRequest without a request message")
        state = self._begin(msg, kind)
        if kind == "request_headers":
            reply = request_headers.handle(state, msg)
            info = state.info
            assert info is not None
            state.span = self._span.enter_context(self._rt.telemetry.exchange_span(info.traceparent))
            state.span.set_attribute("http.path", info.path)
        elif kind == "request_body":
            reply = await request_body.handle(state, msg, self._rt)
        elif kind == "response_headers":
            reply = response_headers.handle(state, msg, self._rt)
        elif kind == "response_body":
            reply = await response_body.handle(state, msg, self._rt)
        else:
            reply = mutations.passthrough(kind)  # type: ignore[arg-type]
        return None if msg.observability_mode else reply

    def fallback(self, msg: pb.ProcessingRequest, exc: BaseException) -> pb.ProcessingResponse | None:
        """The reply when handling ``msg`` raised: unchanged ("continue") on a fail-open route,
        an error on a fail-closed one; the rest of the exchange passes through."""
        kind = msg.WhichOneof("request")
        if kind is None or msg.observability_mode:
            return None
        state = self._state
        if state is None:
            return mutations.passthrough(kind)  # type: ignore[arg-type]
        streamed = state.streamed
        if kind == "response_body" and streamed is not None:
            # Headers already went out: release every withheld byte, in order, unchanged.
            state.checked = None
            return mutations.chunk_reply("response_body", release_pending(streamed))
        closed = state.fail_closed and kind in ("request_body", "response_headers", "response_body")
        state.checked = None
        if closed:
            return reject(errors.failure_outcome(errors.reason_for_exception(exc), "closed"))
        return mutations.passthrough(kind)  # type: ignore[arg-type]

    def close(self) -> None:
        self._span.close()

    def _begin(self, msg: pb.ProcessingRequest, kind: str) -> StreamState:
        rank = _RANK[kind]
        if rank < self._rank or (rank == self._rank and kind not in _REPEATABLE):
            raise ProtocolError(f"{kind} after {self._last}")
        self._rank, self._last = rank, kind
        if self._state is None:
            # Pinned for the whole exchange: a config reload never changes a running exchange.
            self._state = StreamState(config=self._rt.config.current)
        return self._state
