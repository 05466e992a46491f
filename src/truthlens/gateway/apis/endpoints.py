"""The API an exchange speaks: one typed interface from request and response bytes to what a
check needs (question, passages, answers) and from a presentation back to bytes, with one
implementation per endpoint — chat completions (:mod:`~truthlens.gateway.apis.chat.body`,
:mod:`~truthlens.gateway.apis.chat.stream`), the Responses API
(:mod:`~truthlens.gateway.apis.responses.body`, :mod:`~truthlens.gateway.apis.responses.stream`) and
the legacy completions API (:mod:`~truthlens.gateway.apis.completions.body`,
:mod:`~truthlens.gateway.apis.completions.stream`).

The request headers phase picks the endpoint once per exchange from the path
(:func:`for_path`); the other phases talk only to this interface, and the stream state machine
(bytes withheld, released, in order) stays in :mod:`truthlens.gateway.exchange.phases.response_stream`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthlens.gateway.apis.chat import body as openai_body
from truthlens.gateway.apis.chat.progressive import ProgressiveChatStream
from truthlens.gateway.apis.chat.stream import ChatStream
from truthlens.gateway.apis.completions import body as completions_body
from truthlens.gateway.apis.completions.stream import CompletionsStream, ProgressiveCompletionsStream
from truthlens.gateway.apis.responses import body as responses_body
from truthlens.gateway.apis.responses.progressive import ProgressiveResponsesStream
from truthlens.gateway.apis.responses.stream import ResponsesStream
from truthlens.gateway.core.paths import normal_path

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import (
        DecodedRequest,
        Endpoint,
        EndpointName,
        ParsedResponse,
        ProgressiveCodec,
        Strategy,
        StreamCodec,
    )


class _JsonBodies:
    """What both APIs share: JSON request bodies and OpenAI error bodies."""

    def mentions(self, body: bytes, name: str) -> bool:
        return openai_body.mentions(body, name)

    def without_field(self, body: bytes, name: str, *, strict: bool = False) -> bytes | None:
        return openai_body.without_field(body, name, strict=strict)

    def error_body(self, status: int, message: str, error_type: str | None = None, code: str | None = None) -> bytes:
        return openai_body.error_json(status, message, error_type, code)


class ChatEndpoint(_JsonBodies):
    """``POST /v1/chat/completions``."""

    name: EndpointName = "chat"
    request_keys = openai_body.REQUEST_KEYS

    def decode_request(self, body: bytes, *, max_bytes: int | None = None) -> DecodedRequest:
        return openai_body.decode_chat_request(body, max_bytes=max_bytes)

    def parse_response(self, body: bytes) -> ParsedResponse:
        return openai_body.parse_chat_response(body)

    def stream(self, strategy: Strategy, *, warns: bool) -> StreamCodec:
        return ChatStream(strategy, warns=warns)

    def progressive_stream(self) -> ProgressiveCodec:
        return ProgressiveChatStream()


class ResponsesEndpoint(_JsonBodies):
    """``POST /v1/responses``."""

    name: EndpointName = "responses"
    request_keys = responses_body.REQUEST_KEYS

    def decode_request(self, body: bytes, *, max_bytes: int | None = None) -> DecodedRequest:
        return responses_body.decode_responses_request(body, max_bytes=max_bytes)

    def parse_response(self, body: bytes) -> ParsedResponse:
        return responses_body.parse_responses_response(body)

    def stream(self, strategy: Strategy, *, warns: bool) -> StreamCodec:
        return ResponsesStream(strategy, warns=warns)

    def progressive_stream(self) -> ProgressiveCodec:
        return ProgressiveResponsesStream()


class CompletionsEndpoint(_JsonBodies):
    """``POST /v1/completions`` (the legacy API: one ``prompt``, answers in ``choices[].text``)."""

    name: EndpointName = "completions"
    request_keys = completions_body.REQUEST_KEYS

    def decode_request(self, body: bytes, *, max_bytes: int | None = None) -> DecodedRequest:
        return completions_body.decode_completion_request(body, max_bytes=max_bytes)

    def parse_response(self, body: bytes) -> ParsedResponse:
        return completions_body.parse_completion_response(body)

    def stream(self, strategy: Strategy, *, warns: bool) -> StreamCodec:
        return CompletionsStream(strategy, warns=warns)

    def progressive_stream(self) -> ProgressiveCodec:
        return ProgressiveCompletionsStream()


CHAT = ChatEndpoint()
RESPONSES = ResponsesEndpoint()
COMPLETIONS = CompletionsEndpoint()
ALL: tuple[Endpoint, ...] = (CHAT, RESPONSES, COMPLETIONS)


def for_path(path: str) -> Endpoint:
    """The API a request path speaks: the Responses API for ``.../responses`` (``/v1/responses``,
    also behind a path prefix), the legacy completions API for ``.../completions`` that is not
    ``.../chat/completions``, chat completions for everything else, as before they existed. The
    path is read as path conditions read it (:func:`~truthlens.gateway.core.paths.normal_path`), so
    ``/v1/Responses/`` and ``/v1/responses;x`` are the Responses API too."""
    path = normal_path(path)
    if path.endswith("/responses"):
        return RESPONSES
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        return COMPLETIONS
    return CHAT
