"""The typed interface between the gateway's policy and the APIs it speaks, both ways: from
request and response bytes to what a check needs (question, passages, answers: :class:`ParsedRequest`,
:class:`ParsedResponse`, :class:`StreamCodec`), and from what the policy decided the client sees
(:class:`Presentation`, :class:`Refusal`) back to bytes. One implementation per API
(:mod:`~truthlens.gateway.apis.endpoints`); the policy and the exchange read only these types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from truthlens.gateway.core.errors import GatewayError

if TYPE_CHECKING:
    from truthlens.gateway.apis.context.settings import ContextSettings
    from truthlens.gateway.apis.sse import SSEEvent
    from truthlens.modes.base import GroundedQuery

EndpointName = Literal["chat", "responses", "completions"]
Strategy = Literal["passthrough", "hold", "progressive"]


class BodyError(GatewayError):
    """A body that is not the OpenAI shape expected; ``reason`` is one of
    :data:`truthlens.gateway.core.errors.REASONS` (``malformed_json``, ``not_an_object``, ``bad_messages``,
    ``bad_field``, ``bad_context``, ``too_large``, ``bad_response``)."""


@dataclass(frozen=True, slots=True)
class WarningSpec:
    """The route's warning and where it goes in each choice's content."""

    text: str
    position: Literal["prepend", "append"] = "prepend"

    def apply(self, content: str) -> str:
        note = self.text.strip()
        if not content:
            return note
        if self.position == "prepend":
            return f"{note}{_WARNING_GAP}{content}"
        return f"{content}{_WARNING_GAP}{note}"

    @property
    def lead(self) -> int:
        """Code points :meth:`apply` puts before a (non-empty) content's first character: the
        prepended warning and the blank line after it; 0 when it is appended."""
        return len(self.text.strip()) + len(_WARNING_GAP) if self.position == "prepend" else 0


_WARNING_GAP = "\n\n"  # a blank line between the warning and the answer


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What a presentation changes in a JSON answer: new contents per answer (None: keep), the
    warning on the answers in ``warn_indices`` (None: every one), ``details`` as the field
    ``truthlens``."""

    contents: Sequence[str | None] | None = None
    warning: WarningSpec | None = None
    details: Mapping[str, Any] | None = None
    warn_indices: frozenset[int] | None = None


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

    @property
    def context_source(self) -> str:
        """Where the passages came from: ``field``, ``tool``, ``system`` (comma-joined when several),
        ``template:<name>``, or "" (:mod:`~truthlens.gateway.apis.context.sources`)."""

    @property
    def near_template(self) -> str:
        """With no passages: the template the request began much like without being read as it
        (:mod:`~truthlens.gateway.apis.context.tolerant`), said when it is skipped; "" when none."""

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


class ProgressiveCodec(StreamCodec, Protocol):
    """A stream codec for progressive release: a held answer released sentence by sentence as
    each passes its check."""

    def text_added(self) -> str | None:
        """The text the events read since the last call added to the answer; None once the
        stream has more than one answer (progressive release follows one)."""

    def cut_event(self, event: SSEEvent, keep: int) -> tuple[bytes, bytes]:
        """``event`` (one that adds text) as two events: its first ``keep`` characters, then the rest."""

    def text_event(self, text: str) -> bytes:
        """An event adding ``text`` to the answer (a warning inside it)."""

    def verdict_before(self, shown: Presentation, details: dict[str, Any], end: SSEEvent | None) -> bytes:
        """What replaces ``end`` (the event that ends the answer; None: the stream's end): the
        verdict, then ``end``; or the verdict and the refusal's events that end the stream."""


class Endpoint(Protocol):
    """One API: how its requests, JSON answers and streams are read and rewritten."""

    @property
    def name(self) -> EndpointName: ...

    @property
    def request_keys(self) -> frozenset[str]:
        """The API's own request fields (no extension field may take one of these names)."""
        ...

    def decode_request(self, body: bytes, *, max_bytes: int | None = None) -> DecodedRequest:
        """Over ``max_bytes`` the body is refused before any JSON is parsed; raises ``BodyError``."""

    def parse_response(self, body: bytes) -> ParsedResponse:
        """Raises ``BodyError`` (``bad_response``, ``malformed_json``)."""

    def stream(self, strategy: Strategy, *, warns: bool) -> StreamCodec:
        """A codec for one SSE answer; ``warns``: a warning may be added to it (the body action)."""

    def progressive_stream(self) -> ProgressiveCodec:
        """A codec for one SSE answer released sentence by sentence."""

    def mentions(self, body: bytes, name: str) -> bool:
        """Whether ``body`` may hold the top-level field ``name`` (spelt out or escaped), without
        decoding it."""

    def without_field(self, body: bytes, name: str, *, strict: bool = False) -> bytes | None:
        """``body`` less its top-level field ``name``, whatever the request's shape (None: it has
        no such field); ``strict``: a body that mentions ``name`` but is not JSON raises
        ``BodyError`` (``malformed_json``) instead of reading as "no field"."""

    def error_body(self, status: int, message: str, error_type: str | None = None, code: str | None = None) -> bytes:
        """The API's error body (``{"error": {"message", "type", "param", "code"}}``)."""


Outcome = Literal["block", "refuse", "rewrite", "annotate", "unchecked", "skipped"]
# What was done to the answer (x-truthlens-action, the details' "action", the actions metric).
Action = Literal["none", "warned", "blocked", "rewritten"]
# Where the warning went: the route's warning_position on JSON and held streams, "append" on a
# passthrough stream, whose content is out before the verdict exists.
WARNING_POSITION_KEY = "warning_position"


def moved_spans(details: Mapping[str, Any], by: int, moves: Callable[[int], bool]) -> dict[str, Any]:
    """``details`` with every span of each choice ``moves`` picks (by index) ``by`` code points
    later: span offsets index the content the client receives, a prepended warning included."""
    if not by:
        return dict(details)
    choices = []
    for choice in details.get("choices", ()):
        if choice.get("spans") and moves(choice["index"]):
            spans = [{**span, "start": span["start"] + by, "end": span["end"] + by} for span in choice["spans"]]
            choice = {**choice, "spans": spans}
        choices.append(choice)
    return {**details, "choices": choices}


@dataclass(frozen=True, slots=True)
class Refusal:
    """The client gets an OpenAI-style error instead of the answer."""

    status: int
    message: str
    error_type: str  # the error body's ``type``
    code: str  # the error body's ``code``: ``hallucination_detected`` or a failure reason
    headers: Mapping[str, str]
    envoy_details: str  # Envoy's response-code details, for its access log


@dataclass(frozen=True, slots=True)
class Presentation:
    """Everything the client sees of one exchange; no protobuf, no JSON bytes."""

    headers: Mapping[str, str]
    contents: tuple[str | None, ...] | None  # per choice; None: the upstream's contents stand
    warning: WarningSpec | None  # added to every choice (body action on a detection)
    details: Mapping[str, Any]  # the verdict as the ``truthlens`` field / a stream's verdict chunk
    # A JSON body carries ``details`` only when the client asked for spans; a checked stream
    # always ends with its verdict chunk.
    attach_details: bool
    refusal: Refusal | None
    outcome: Outcome
    warned: frozenset[int] | None = None  # the choices the warning goes on (None: every choice)

    @property
    def action(self) -> Action:
        """What was done to the answer: refused, rewritten by the mode, warned, or nothing."""
        if self.refusal is not None:
            return "blocked"
        if self.contents is not None:
            return "rewritten"
        return "warned" if self.warning is not None else "none"

    def warns(self, index: int) -> bool:
        return self.warning is not None and (self.warned is None or index in self.warned)

    def late_warning(self) -> str | None:
        """The warning as it follows content that already went out (a passthrough stream): after
        a blank line, whatever the route's position."""
        return None if self.warning is None else "\n\n" + self.warning.text.strip()

    def late_details(self) -> Mapping[str, Any]:
        """The details as a passthrough stream's verdict chunk: a warning there was appended
        (the content was out before the verdict), and the chunk says so; its spans index the
        content as it streamed (not past a warning the route would have prepended)."""
        if self.warning is None:
            return self.details
        return moved_spans({**self.details, WARNING_POSITION_KEY: "append"}, -self.warning.lead, self.warns)

    def final_contents(self, answers: tuple[str, ...]) -> tuple[str, ...]:
        """What each choice finally says: rewritten where the mode rewrote, warned where warned."""
        contents = list(answers)
        if self.contents is not None:
            contents = [new if new is not None else old for new, old in zip(self.contents, answers, strict=False)]
        if self.warning is not None:
            contents = [self.warning.apply(c) if self.warns(i) else c for i, c in enumerate(contents)]
        return tuple(contents)
