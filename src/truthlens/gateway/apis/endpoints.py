"""The API an exchange speaks: one typed interface from request and response bytes to what a
check needs (question, passages, answers) and from a presentation back to bytes, with one
implementation per endpoint — chat completions (:mod:`~truthlens.gateway.apis.chat.body`,
:mod:`~truthlens.gateway.apis.chat.stream`) and the Responses API
(:mod:`~truthlens.gateway.apis.responses.body`, :mod:`~truthlens.gateway.apis.responses.stream`).

The request headers phase picks the endpoint once per exchange from the path
(:func:`for_path`); the other phases talk only to this interface, and the stream state machine
(bytes withheld, released, in order) stays in :mod:`truthlens.gateway.exchange.phases.response_stream`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

from truthlens.gateway.apis.chat import body as openai_body
from truthlens.gateway.apis.chat.stream import ChatStream
from truthlens.gateway.apis.responses import body as responses_body
from truthlens.gateway.apis.responses.stream import ResponsesStream
from truthlens.gateway.core.paths import normal_path

if TYPE_CHECKING:
    from truthlens.gateway.apis.chat.body import ContextSettings, Rewrite
    from truthlens.gateway.apis.sse import SSEEvent
    from truthlens.gateway.policy.presentation import Presentation, Refusal
    from truthlens.modes.base import GroundedQuery

EndpointName = Literal["chat", "responses"]
Strategy = Literal["passthrough", "hold"]


class ParsedRequest(Protocol):
    """A request as one route reads it."""

    @property
    def model(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def passages(self) -> tuple[str, ...]: ...

    @property
    def stream(self) -> bool: ...

    @property
    def forward_body(self) -> bytes | None:
        """The body to send upstream when the context extension field was stripped; None: the original."""

    def grounded_query(self) -> GroundedQuery: ...


class DecodedRequest(Protocol):
    """A request decoded once: what routing reads, and each route's reading of it."""

    @property
    def model(self) -> str: ...

    @property
    def question(self) -> str: ...

    def read(self, ctx: ContextSettings) -> ParsedRequest: ...


class ParsedResponse(Protocol):
    """A JSON answer: its answers in order (chat: choices; Responses: ``message`` output items)."""

    @property
    def contents(self) -> tuple[str, ...]: ...

    @property
    def body(self) -> bytes: ...

    def render(self, change: Rewrite) -> bytes:
        """The answer with ``change`` written into it; an upstream-written ``truthlens`` field
        never survives. The original bytes when nothing changes."""


class StreamCodec(Protocol):
    """The translation side of one SSE answer. The phase feeds it whole events in order and
    keeps every byte it has not released; the codec says what the events mean and renders
    the bytes that replace or follow them."""

    @property
    def holding(self) -> bool:
        """Passthrough: events from here on are withheld until the answer ends (a Responses
        message whose text closed while a warning may still have to go before its done events)."""

    @property
    def answer_complete(self) -> bool:
        """The answer is whole if the stream ends now (a Responses terminal event was seen: it and
        every event after it are held and judged with the answer when the stream ends)."""

    def add(self, event: SSEEvent) -> bool:
        """Accumulate one event; True when it ends the answer (the verdict goes before it).
        ``ValueError``: not JSON; ``BodyError``: not part of an answer (an upstream error)."""

    def ends_answer(self, event: SSEEvent) -> bool:
        """Whether ``event`` ends an answer, without accumulating it."""

    def answers(self) -> tuple[str, ...]: ...

    def scrub(self, event: SSEEvent) -> SSEEvent | None:
        """``event`` less any verdict the upstream wrote: itself, a rewritten event, or None (dropped)."""

    def finish(self, shown: Presentation, withheld: bytes, end: SSEEvent | None) -> bytes:
        """What replaces the withheld events (``withheld``, received before ``end``) and the event
        that ended the answer (None: the stream's end did), once the check decided ``shown``."""

    def unchecked_events(self, shown: Presentation) -> bytes:
        """The verdict (and a refusal) of an answer released unchecked, to go before its end."""

    def refusal_events(self, refusal: Refusal) -> bytes:
        """The whole stream the client gets instead of a held answer that is refused."""


class Endpoint(Protocol):
    """One API: how its requests, JSON answers and streams are read and rewritten."""

    @property
    def name(self) -> EndpointName: ...

    def decode_request(self, body: bytes, *, max_bytes: int | None = None) -> DecodedRequest:
        """Over ``max_bytes`` the body is refused before any JSON is parsed; raises ``BodyError``."""

    def parse_response(self, body: bytes) -> ParsedResponse:
        """Raises ``BodyError`` (``bad_response``, ``malformed_json``)."""

    def stream(self, strategy: Strategy, *, warns: bool) -> StreamCodec:
        """A codec for one SSE answer; ``warns``: a warning may be added to it (the body action)."""


class ChatEndpoint:
    """``POST /v1/chat/completions``."""

    name: EndpointName = "chat"

    def decode_request(self, body: bytes, *, max_bytes: int | None = None) -> DecodedRequest:
        return openai_body.decode_chat_request(body, max_bytes=max_bytes)

    def parse_response(self, body: bytes) -> ParsedResponse:
        return openai_body.parse_chat_response(body)

    def stream(self, strategy: Strategy, *, warns: bool) -> StreamCodec:
        return ChatStream(strategy)


class ResponsesEndpoint:
    """``POST /v1/responses``."""

    name: EndpointName = "responses"

    def decode_request(self, body: bytes, *, max_bytes: int | None = None) -> DecodedRequest:
        return responses_body.decode_responses_request(body, max_bytes=max_bytes)

    def parse_response(self, body: bytes) -> ParsedResponse:
        return responses_body.parse_responses_response(body)

    def stream(self, strategy: Strategy, *, warns: bool) -> StreamCodec:
        return ResponsesStream(strategy, warns=warns)


CHAT = ChatEndpoint()
RESPONSES = ResponsesEndpoint()


def for_path(path: str) -> Endpoint:
    """The API a request path speaks: the Responses API for ``.../responses`` (``/v1/responses``,
    also behind a path prefix), chat completions for everything else, as before it existed. The
    path is read as path conditions read it (:func:`~truthlens.gateway.core.paths.normal_path`), so
    ``/v1/Responses/`` and ``/v1/responses;x`` are the Responses API too."""
    return RESPONSES if normal_path(path).endswith("/responses") else CHAT
