"""Response headers: decide whether and how the body will be checked (JSON and held SSE
buffered by Envoy, passthrough SSE STREAMED, or not at all: detection off lets it stream past the
processor), switch Envoy's response body mode accordingly, and remove every X-TruthLens-* header
the upstream wrote (and the unchecked mark of the shipped routes)."""

from __future__ import annotations

from collections.abc import Mapping

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis import sse
from truthlens.gateway.apis.interface import Endpoint, Presentation
from truthlens.gateway.exchange import mutations, ungrounded
from truthlens.gateway.exchange.phases.check import skip
from truthlens.gateway.exchange.phases.progressive_state import Progressive
from truthlens.gateway.exchange.phases.request_headers import header_dict
from truthlens.gateway.exchange.phases.state import Runtime, StreamedResponse, StreamState
from truthlens.gateway.policy import decisions
from truthlens.gateway.policy.decisions import RequestFacts
from truthlens.gateway.policy.domains import DOMAIN_HEADER
from truthlens.gateway.policy.presentation import VERDICT_HEADER_PREFIX, provisional_headers


def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    headers = header_dict(msg.response_headers.headers)
    spoofed = spoofed_headers(headers)
    checked = state.checked
    if checked is None:
        # Nothing to check. A route that asked for a check which could not be prepared says so,
        # and its body is still read, only to drop a verdict the upstream wrote; detection off
        # (or no decision) lets the body stream past the processor as Envoy alone would.
        shown = state.unchecked or _bodiless(state, rt)
        if shown is None:
            return reply(None, spoofed, "none")
        if shown.refusal is not None:
            return mutations.refusal_response(state.api, shown.refusal)
        scrub = _scrub_mode(state, headers)
        return reply(shown.headers, spoofed + (_length(headers) if scrub == "streamed" else []), scrub)

    route = checked.route
    reason = _unchecked_reason(headers, msg.response_headers.end_of_stream, route.max_body_bytes)
    if reason is not None:
        shown = skip(state, rt, route, checked.decision.name, reason, _detail(reason, headers), upstream=True)
        if shown.refusal is not None:
            return mutations.refusal_response(state.api, shown.refusal)
        return reply(shown.headers, spoofed, "none")

    if _media_type(headers) == "text/event-stream" and route.streaming == "progressive":
        state.streamed = progressive_stream(state.api, route.actions)
    elif _media_type(headers) == "text/event-stream" and route.streaming == "passthrough":
        state.streamed = StreamedResponse(
            strategy="passthrough", decoder=sse.SSEDecoder(),
            codec=state.api.stream("passthrough", warns="body" in route.actions),
        )
    if state.streamed is not None:
        # These go out now; the verdict itself travels in the stream's last chunk.
        early = {"x-truthlens-enabled": "true", "x-truthlens-mode": route.mode}
        if state.domain is not None:  # known since the request: a domain rule read it
            early[DOMAIN_HEADER] = state.domain.header()
        return reply(early if "header" in route.actions else None, spoofed + _length(headers), "streamed")
    if _media_type(headers) == "text/event-stream":
        # A held stream: Envoy keeps the bytes (it has them all if the processor goes away)
        # and sends them in one message at the end, or, over its buffer, what it holds with
        # the rest flowing through unchecked.
        state.streamed = StreamedResponse(
            strategy="hold", decoder=sse.SSEDecoder(), codec=state.api.stream("hold", warns="body" in route.actions),
            buffered=True,
        )
    # JSON (and held SSE): the body reply sets the verdict's headers (and the new
    # content-length) over the provisional ones. With a content-length (within the route's
    # limit, checked above) BUFFERED; without one the size is unknown, so BUFFERED_PARTIAL:
    # an answer larger than Envoy buffers goes through intact instead of becoming a 500.
    # (BUFFERED_PARTIAL cannot replace a body of announced length: Envoy answers 500.)
    mode: mutations.BodyMode = "buffered" if "content-length" in headers else "buffered_partial"
    # A held stream is re-written whole: its length is the body reply's (set there), and an
    # upstream's content-length would stand until then.
    return reply(provisional_headers(route), spoofed + (_length(headers) if state.streamed else []), mode)


def _bodiless(state: StreamState, rt: Runtime) -> Presentation | None:
    """A request without a body (a GET) on a route that checks: no request was read, so none
    carries context; it is skipped as such (its header and audit line), never answered silently."""
    info = state.info
    if not state.matched or info is None:
        return None
    decision = decisions.match(state.config, RequestFacts(info.path, info.method, info.headers,
                                                           repeated=info.repeated))
    if decision is None or decision.route is None:
        return None
    return ungrounded.skip(state, rt, decision.route, decision.name)


def progressive_stream(api: Endpoint, actions: frozenset[str]) -> StreamedResponse:
    """A progressive stream's state. A Responses stream whose route warns without blocking
    streams through instead (its warning follows the answer, as on a passthrough route):
    nothing there has to be withheld, and a warning inside a Responses answer would have to be
    restated in every done event."""
    if api.name == "responses" and "body" in actions and "block" not in actions:
        return StreamedResponse(strategy="passthrough", decoder=sse.SSEDecoder(),
                                codec=api.stream("passthrough", warns=True))
    codec = api.progressive_stream()
    return StreamedResponse(strategy="progressive", decoder=sse.SSEDecoder(), codec=codec,
                            progressive=Progressive(codec))


def _scrub_mode(state: StreamState, headers: dict[str, str]) -> mutations.BodyMode:
    """How the body of an answer whose route checks, but whose check could not be prepared (no
    context, a GET), reaches the processor to have an upstream-written ``truthlens`` field or
    chunk removed: the client is told the answer is unchecked, and nothing in its body may
    contradict that. JSON buffered (within the global size limit), SSE streamed; anything else
    (errors, other types, compressed, too large) not at all. A detection-off route's body is
    never read (:func:`handle`): it streams past the processor as Envoy alone forwards it, a
    verdict the upstream wrote in it included (no header of the gateway's calls it checked)."""
    if not state.matched or _unchecked_reason(headers, False, state.config.hallucination.max_body_bytes):
        return "none"  # no route (e.g. /v1/models) or nothing readable
    if _media_type(headers) == "text/event-stream":
        state.streamed = StreamedResponse(
            strategy="passthrough", decoder=sse.SSEDecoder(), codec=state.api.stream("passthrough", warns=False)
        )
        return "streamed"
    return "buffered" if "content-length" in headers else "buffered_partial"


def _length(headers: Mapping[str, str]) -> list[str]:
    """``content-length`` when the upstream sent one with an event stream the processor may
    change (a verdict added, a forged one dropped, a held one re-written): a buffering proxy or
    a serverless front sends a stream whole with its length, and Envoy then refused the longer
    body (500, or a cut stream). Removed, the response goes chunked."""
    return ["content-length"] if "content-length" in headers else []


def spoofed_headers(headers: Mapping[str, str]) -> list[str]:
    """The X-TruthLens-* headers the upstream wrote. The verdict is the gateway's alone: they are
    removed on every exchange the processor sees, checked or not."""
    return [name for name in headers if name.startswith(VERDICT_HEADER_PREFIX)]


def reply(set_headers: Mapping[str, str] | None, spoofed: list[str], mode: mutations.BodyMode) -> pb.ProcessingResponse:
    """The response-headers reply: ``set_headers`` over the upstream's, every spoofed one removed."""
    remove = [name for name in spoofed if not set_headers or name not in set_headers]
    return mutations.headers_reply("response_headers", set_headers=set_headers, remove=remove, response_body_mode=mode)


def _media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _unchecked_reason(headers: dict[str, str], end_of_stream: bool, max_body_bytes: int) -> str | None:
    status = headers.get(":status", "")
    if not status.startswith("2"):
        return "upstream_status"
    if headers.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
        return "content_encoding"
    if end_of_stream:
        return "bad_response"  # a 2xx without a body has no answer to check
    if _media_type(headers) not in ("application/json", "text/event-stream"):
        return "content_type"
    length = headers.get("content-length", "")
    if length.isdigit() and int(length) > max_body_bytes:
        # Decided before Envoy buffers anything: the answer flows through intact.
        return "too_large"
    return None


def _detail(reason: str, headers: dict[str, str]) -> str | None:
    if reason == "upstream_status":
        return f"the upstream answered {headers.get(':status', '?')}"
    if reason == "content_encoding":
        return f"the upstream's body is {headers.get('content-encoding')}-encoded and cannot be checked"
    if reason == "too_large":
        return f"the upstream's body is {headers.get('content-length')} bytes, over the route's max_body_bytes"
    if reason == "content_type":
        return f"the upstream's content-type {headers.get('content-type', '(none)')!r} cannot be checked"
    return None
