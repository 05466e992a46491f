"""Response headers: decide whether and how the body will be checked (BUFFERED JSON, STREAMED
SSE, or not at all) and switch Envoy's response body mode accordingly."""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway import mutations, openai_body, sse
from truthlens.gateway.phases.check import skip
from truthlens.gateway.phases.request_headers import header_dict
from truthlens.gateway.phases.state import Runtime, StreamedResponse, StreamState


def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    checked = state.checked
    if checked is None:
        if state.unchecked is not None:
            # The request phase could not prepare a check the route asked for: say so.
            headers = state.unchecked.headers
            return mutations.headers_reply("response_headers", set_headers=headers, response_body_mode="none")
        # Nothing to check: stop Envoy from sending (and buffering) the body at all.
        return mutations.headers_reply("response_headers", response_body_mode="none")

    headers = header_dict(msg.response_headers.headers)
    route = checked.route
    reason = _unchecked_reason(headers, msg.response_headers.end_of_stream)
    if reason is not None:
        shown = skip(state, rt, route, checked.decision.name, reason, _detail(reason, headers))
        if shown.refusal is not None:
            return mutations.refusal_response(shown.refusal)
        return mutations.headers_reply("response_headers", set_headers=shown.headers, response_body_mode="none")

    if _media_type(headers) == "text/event-stream":
        state.streamed = StreamedResponse(
            strategy=route.streaming,
            decoder=sse.SSEDecoder(),
            accumulator=openai_body.StreamAccumulator(),
        )
        # These go out now; the verdict itself travels in the stream's last chunk.
        early = {"x-truthlens-enabled": "true", "x-truthlens-mode": route.mode}
        return mutations.headers_reply(
            "response_headers",
            set_headers=early if "header" in route.actions else None,
            response_body_mode="streamed",
        )
    # JSON stays BUFFERED; the body reply sets headers and the new content-length.
    return mutations.passthrough("response_headers")


def _media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _unchecked_reason(headers: dict[str, str], end_of_stream: bool) -> str | None:
    status = headers.get(":status", "")
    if not status.startswith("2"):
        return "upstream_status"
    if headers.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
        return "content_encoding"
    if end_of_stream:
        return "bad_response"  # a 2xx without a body has no answer to check
    if _media_type(headers) not in ("application/json", "text/event-stream"):
        return "content_type"
    return None


def _detail(reason: str, headers: dict[str, str]) -> str | None:
    if reason == "upstream_status":
        return f"the upstream answered {headers.get(':status', '?')}"
    if reason == "content_encoding":
        return f"the upstream's body is {headers.get('content-encoding')}-encoded and cannot be checked"
    if reason == "content_type":
        return f"the upstream's content-type {headers.get('content-type', '(none)')!r} cannot be checked"
    return None
