"""Builds the ext_proc replies: header/body mutations, mode overrides and immediate responses.

Sub-messages are filled in place on the reply (``reply.response_body.response...``): the
keyword constructors of pb2 messages copy every sub-message they are given, which costs more
than the whole encode on the hot path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.core import unchecked_route

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Endpoint, Refusal

HeaderPhase = Literal["request_headers", "response_headers"]
BodyPhase = Literal["request_body", "response_body"]
TrailerPhase = Literal["request_trailers", "response_trailers"]
Phase = Literal[HeaderPhase, BodyPhase, TrailerPhase]
BodyMode = Literal["none", "streamed", "buffered", "buffered_partial"]

_BODY_MODES: dict[BodyMode, int] = {
    "none": pb.ProcessingMode.NONE,
    "streamed": pb.ProcessingMode.STREAMED,
    "buffered": pb.ProcessingMode.BUFFERED,
    # The whole body in one message, or, over Envoy's buffer limit, what it holds (the message
    # then has end_of_stream false and the rest flows through unprocessed) instead of a 500.
    "buffered_partial": pb.ProcessingMode.BUFFERED_PARTIAL,
}
_OVERWRITE = pb.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD
# Header values are bytes. HTTP allows any byte from 0x80 up (obs-text), and clients send
# Latin-1 as often as UTF-8; decoded with ``surrogateescape`` a value that is not UTF-8 keeps
# each such byte as one lone surrogate (U+DC80..U+DCFF, which no UTF-8 text holds), so the same
# bytes go back out when the value is written (``x-request-id`` echoed as the client sent it).
HEADER_ERRORS = "surrogateescape"


def header_value(header: pb.HeaderValue) -> str:
    """A header's value as text: its ``raw_value`` bytes (what Envoy fills) decoded as UTF-8,
    any other byte kept as a lone surrogate (see :data:`HEADER_ERRORS`)."""
    return header.raw_value.decode("utf-8", HEADER_ERRORS) if header.raw_value else header.value


def fill_header_mutation(
    mutation: pb.HeaderMutation,
    set_headers: Mapping[str, str] | None = None,
    remove: Iterable[str] = (),
) -> None:
    """Overwrite (or add) ``set_headers`` and remove ``remove`` on ``mutation``.

    Values go into ``raw_value``: Envoy reads that field and ignores ``value`` when both exist.
    """
    if set_headers:
        for name, value in set_headers.items():
            option = mutation.set_headers.add()
            option.header.key = name
            option.header.raw_value = value.encode("utf-8", HEADER_ERRORS)
            option.append_action = _OVERWRITE
    for name in remove:
        mutation.remove_headers.append(name)


def passthrough(phase: Phase) -> pb.ProcessingResponse:
    """Answer ``phase`` with "continue", changing nothing."""
    reply = pb.ProcessingResponse()
    if phase in ("request_trailers", "response_trailers"):
        getattr(reply, phase).SetInParent()
    else:
        getattr(reply, phase).response.SetInParent()
    return reply


def _request_headers_template(request_body: bool, response: bool, unchecked: bool) -> pb.ProcessingResponse:
    reply = pb.ProcessingResponse()
    common = reply.request_headers.response
    common.SetInParent()
    if unchecked:
        reply.dynamic_metadata.update({unchecked_route.NAMESPACE: {unchecked_route.UNCHECKED_KEY: True}})
        common.clear_route_cache = True
        # Envoy 1.40 picks the route again only after a reply that carries a header mutation
        # (measured: without one the marked route stays); an empty one changes no header.
        common.header_mutation.SetInParent()
    mode = reply.mode_override
    mode.request_body_mode = pb.ProcessingMode.BUFFERED if request_body else pb.ProcessingMode.NONE
    mode.response_header_mode = pb.ProcessingMode.SEND if response else pb.ProcessingMode.SKIP
    mode.response_body_mode = pb.ProcessingMode.NONE
    mode.request_trailer_mode = pb.ProcessingMode.SKIP
    mode.response_trailer_mode = pb.ProcessingMode.SKIP
    return reply


# Every exchange's first reply is one of these eight, built once: a copy costs one C call, where
# building it (the metadata ``Struct`` above all) costs more than the rest of an unchecked exchange's
# request headers phase.
_REQUEST_HEADERS_REPLIES = {(b, r, u): _request_headers_template(b, r, u)
                            for b in (False, True) for r in (False, True) for u in (False, True)}


def request_headers_reply(
    *, request_body: bool, response: bool, set_headers: Mapping[str, str] | None = None, unchecked: bool = False
) -> pb.ProcessingResponse:
    """Continue after the request headers (``set_headers`` over the client's), asking Envoy for
    the later phases the exchange needs and no others (``mode_override``, honoured with
    ``allow_mode_override``): the request body BUFFERED or not at all, the response headers or not
    (with them, their reply picks the body's mode: NONE until then), never the trailers. Without
    the response headers Envoy sends nothing of the response; without both, the exchange is done
    with this one message. ``unchecked``: the exchange moves to the route without the unchecked
    mark (:mod:`truthlens.gateway.core.unchecked_route`): Envoy picks the route again
    (``clear_route_cache``), seeing the reply's metadata."""
    reply = pb.ProcessingResponse()
    reply.CopyFrom(_REQUEST_HEADERS_REPLIES[(request_body, response, unchecked)])
    if set_headers:
        fill_header_mutation(reply.request_headers.response.header_mutation, set_headers)
    return reply


def headers_reply(
    phase: HeaderPhase,
    *,
    set_headers: Mapping[str, str] | None = None,
    remove: Iterable[str] = (),
    response_body_mode: BodyMode | None = None,
) -> pb.ProcessingResponse:
    """Continue after a headers message, optionally mutating headers and the response body mode.

    Envoy honours ``mode_override`` only in replies to headers messages (and only with
    ``allow_mode_override``), so this is the one place a mode changes.
    """
    reply = pb.ProcessingResponse()
    common = getattr(reply, phase).response
    common.SetInParent()
    if set_headers or remove:
        fill_header_mutation(common.header_mutation, set_headers, remove)
    if response_body_mode is not None:
        reply.mode_override.response_body_mode = _BODY_MODES[response_body_mode]  # type: ignore[assignment]
    return reply


def body_reply(
    phase: BodyPhase,
    *,
    body: bytes | None = None,
    set_headers: Mapping[str, str] | None = None,
    remove: Iterable[str] = (),
) -> pb.ProcessingResponse:
    """Continue after a body message; ``body`` (when given) replaces this message's body.

    In BUFFERED mode Envoy keeps the original ``content-length`` and answers 500 when a mutated
    body disagrees with it, so a replaced body always carries its own ``content-length``
    (STREAMED chunks go through :func:`chunk_reply` instead).
    """
    reply = pb.ProcessingResponse()
    common = getattr(reply, phase).response
    common.SetInParent()
    headers = dict(set_headers) if set_headers else {}
    if body is not None:
        common.body_mutation.body = body
        headers["content-length"] = str(len(body))
    if headers or remove:
        fill_header_mutation(common.header_mutation, headers, remove)
    return reply


def chunk_reply(phase: BodyPhase, body: bytes) -> pb.ProcessingResponse:
    """Replace one STREAMED chunk with ``body`` (possibly empty: the chunk is withheld).

    Envoy already removed ``content-length`` for a streamed body, and header mutations in
    replies to streamed chunks are ignored, so none are sent.
    """
    reply = pb.ProcessingResponse()
    common = getattr(reply, phase).response
    common.SetInParent()
    if body:
        common.body_mutation.body = body
    else:
        common.body_mutation.clear_body = True
    return reply


def immediate_response(
    status: int,
    body: bytes,
    *,
    content_type: str = "application/json",
    set_headers: Mapping[str, str] | None = None,
    details: str = "",
) -> pb.ProcessingResponse:
    """Stop processing and send a locally generated response with ``status`` and ``body``."""
    reply = pb.ProcessingResponse()
    immediate = reply.immediate_response
    immediate.status.code = status  # type: ignore[assignment]  # open enum: any HTTP status
    headers = {"content-type": content_type}
    if set_headers:
        headers.update(set_headers)
    fill_header_mutation(immediate.headers, headers)
    immediate.body = body
    if details:
        # Envoy puts this in %RESPONSE_CODE_DETAILS%; it must be a single token.
        immediate.details = details.replace(" ", "_")
    return reply


UNREMOVABLE_REASON = "context_field_unremovable"


def field_unremovable(api: Endpoint, message: str) -> pb.ProcessingResponse:
    """The 400 of a request body the context extension field cannot be cut out of (not JSON, or
    in a content coding): ``code`` and ``x-truthlens-reason`` ``context_field_unremovable``."""
    body = api.error_body(400, message, "invalid_request_error", UNREMOVABLE_REASON)
    return immediate_response(400, body, set_headers={"x-truthlens-reason": UNREMOVABLE_REASON},
                              details="truthlens_" + UNREMOVABLE_REASON)


def refusal_response(api: Endpoint, refusal: Refusal) -> pb.ProcessingResponse:
    """The error a refused exchange answers with in ``api``'s shape, instead of the upstream's answer."""
    body = api.error_body(refusal.status, refusal.message, refusal.error_type, refusal.code)
    return immediate_response(refusal.status, body, set_headers=refusal.headers, details=refusal.envoy_details)
