"""The Responses API stream as the streamed-response phase needs it: the semantic events
(``response.output_item.added``, ``response.output_text.delta``, ``response.output_text.done``,
``response.completed``, ...) accumulated into one answer per ``message`` item, the terminal
event (``response.completed`` / ``response.incomplete``) as the end of the answer, and what goes
around a checked answer.

- The verdict is an event of its own, ``{"type": "truthlens.verdict", "sequence_number": n,
  "truthlens": {...}}``, just before the terminal event (the ``openai`` SDK yields an event of an
  unknown type as an event object; it does not fail).
- Passthrough with the body action: deltas go out at once; from a message's first done event on
  the rest is withheld until the end, so that a warning goes out as one more delta *before* the
  done events, which then carry the warned text, as ``response.completed`` does.
- Hold: the withheld events go out again with each changed text part as one delta before its
  done events, every done event and the terminal event carrying the final text (the top-level
  ``output_text`` too when present), sequence numbers renumbered from the first withheld one.
- A refusal is an ``error`` event with ``code``, ``message`` and ``param`` at its top level (the
  API reference's shape) and the same in an ``error`` object (the shape the API sends, which
  the ``openai`` SDK raises as ``APIError``); instead of a held answer it comes between the
  held ``response.created`` and a ``response.failed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from truthlens.gateway.apis import forged, json_doc
from truthlens.gateway.apis.chat.body import event_object
from truthlens.gateway.apis.forged import DETAILS_FIELD
from truthlens.gateway.apis.interface import BodyError
from truthlens.gateway.apis.responses.body import output_text, place_text, with_part_text
from truthlens.gateway.apis.responses.rendered import Part, RenderedText
from truthlens.gateway.apis.sse import SSEDecoder, SSEError, SSEEvent, encode_event

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Presentation, Refusal, Strategy

VERDICT_EVENT = "truthlens.verdict"
TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete"})
_LIFECYCLE_EVENTS = frozenset({"response.created", "response.in_progress", "response.queued"})
# The events that close a message's text: a warning must go before the first of them.
_CLOSING_EVENTS = frozenset({"response.output_text.done", "response.content_part.done", "response.output_item.done"})


@dataclass(frozen=True, slots=True)
class _Change:
    """A text part whose final text is not what the upstream wrote."""

    delta: str  # what the client still has to receive of it
    text: str  # its whole final text, as the done events and the terminal event say it
    shift: int | None  # how far its annotations move (None: dropped)


class ResponsesStream:
    """One Responses API stream (see :class:`truthlens.gateway.apis.interface.StreamCodec`)."""

    def __init__(self, strategy: Strategy, *, warns: bool = False) -> None:
        self.strategy = strategy
        self._warns = warns and strategy == "passthrough"
        self.holding = False
        # A terminal event was seen: the answer may end with the stream. Everything from it on
        # is held (never passed unread) and judged with the rest when the stream ends.
        self.answer_complete = False
        self._rendered = RenderedText()
        self._sent: dict[Part, str] = {}  # passthrough: what the client got of each part before holding
        self._created: dict[str, Any] | None = None  # the response object of response.created
        self._last_seq = -1
        self._other_output = False  # an output item that is not a message (no_text when alone)
        # The withheld events as read (raw bytes, JSON object), so that the end of a held stream
        # does not parse them again.
        self._held: list[tuple[bytes, dict[str, Any] | None]] = []

    @property
    def _messages(self) -> dict[int, str]:
        return self._rendered.messages

    # -- reading ----------------------------------------------------------------------------------

    def add(self, event: SSEEvent) -> bool:
        ends, doc = self._read(event)
        if not ends and (self.strategy == "hold" or self.holding):
            self._held.append((event.raw, doc))
        return ends

    def _read(self, event: SSEEvent) -> tuple[bool, dict[str, Any] | None]:
        if event.is_done:  # not part of the Responses API, but some servers end with it
            return True, None
        if not event.has_data:
            return False, None
        doc = event_object(event.data)
        kind = doc.get("type")
        if not isinstance(kind, str):
            raise BodyError("bad_response", "a Responses stream event has no string 'type'")
        seq = doc.get("sequence_number")
        if isinstance(seq, int):
            self._last_seq = max(self._last_seq, seq)
        if kind == "error":
            raise BodyError("bad_response", f"the upstream's stream reported an error: {_error_text(doc)}")
        if kind == "response.failed":
            failed = doc.get("response")
            raise BodyError("bad_response", "the upstream's response failed: "
                            f"{_error_text(failed.get('error') if isinstance(failed, dict) else None)}")
        rendered = self._rendered
        if kind in _LIFECYCLE_EVENTS:
            if self._created is None and isinstance(doc.get("response"), dict):
                self._created = doc["response"]
        elif kind in TERMINAL_EVENTS:
            response = doc.get("response")
            if not isinstance(response, dict):
                raise BodyError("bad_response", f"{kind} has no 'response' object")
            if response.get("output"):
                rendered.restated_output(response["output"], kind)
            rendered.ended = True
            self._hold()
            self.answer_complete = True
        elif kind == "response.output_item.added":
            item = _object(doc, "item")
            if item.get("type") == "message":
                rendered.message(_index(doc, "output_index"), item.get("id"))
            else:
                self._other_output = True  # a function call, say: no text of its own
        elif kind == "response.content_part.added":
            part = _object(doc, "part")
            if part.get("type") == "output_text":
                rendered.message(_index(doc, "output_index"), doc.get("item_id"))
                rendered.open_part(_part(doc), _string(part, "text", ""))
        elif kind == "response.output_text.delta":
            rendered.message(_index(doc, "output_index"), doc.get("item_id"))
            rendered.delta(_part(doc), _string(doc, "delta"))
        elif kind in _CLOSING_EVENTS:
            self._close(kind, doc)
        return False, doc

    def _close(self, kind: str, doc: Mapping[str, Any]) -> None:
        oi = _index(doc, "output_index")
        rendered = self._rendered
        if kind == "response.output_item.done":
            item = _object(doc, "item")
            if item.get("type") != "message":
                return
            rendered.message(oi, item.get("id"))
            rendered.restated_item(item, oi, kind)
        elif kind == "response.content_part.done":
            part = _object(doc, "part")
            if part.get("type") != "output_text":
                return
            rendered.restated(_part(doc), _string(part, "text"), kind)
        else:
            rendered.restated(_part(doc), _string(doc, "text"), kind)
        if self._warns:
            self._hold()

    def _hold(self) -> None:
        """Withhold every event from here on (passthrough); remember what the client has."""
        if self.strategy == "passthrough" and not self.holding:
            self._sent = self._rendered.snapshot()
        self.holding = True

    def ends_answer(self, event: SSEEvent) -> bool:
        if event.is_done:
            return True
        if not event.has_data or not any(kind in event.data for kind in TERMINAL_EVENTS):
            return False
        try:
            doc = json_doc.loads(event.data)
        except ValueError:
            return False
        return isinstance(doc, dict) and doc.get("type") in TERMINAL_EVENTS

    def answers(self) -> tuple[str, ...]:
        return self._rendered.answers() or (("",) if self._other_output else ())

    def scrub(self, event: SSEEvent) -> SSEEvent | None:
        """None for a verdict event the upstream wrote (a ``truthlens.*`` type or event name, or
        a top-level ``truthlens`` field, whatever its type); any other event loses its
        ``truthlens`` fields wherever they sit (a lifecycle event's response object, say)."""
        return forged.scrub_event(event, _is_verdict_event)

    # -- writing ----------------------------------------------------------------------------------

    def finish(self, shown: Presentation, withheld: bytes, end: SSEEvent | None) -> bytes:
        if self.strategy == "hold" and shown.refusal is not None:
            return self.refusal_events(shown.refusal)
        changes = self._changes(shown)
        held = self._held if sum(len(raw) for raw, _ in self._held) == len(withheld) else _events(withheld)
        numbers = _Numbers(next((s for _, d in held if d is not None and (s := _seq(d)) is not None),
                                self._last_seq + 1))
        out = bytearray()
        delivered: set[Part] = set()
        verdict = True  # still to place: before the first terminal event, else before the end
        for raw, doc in held:
            kind = doc.get("type") if doc is not None else None
            if doc is None or not isinstance(kind, str):
                out += raw  # a comment, or an event the codec does not read: as it came
                continue
            if kind == "response.output_text.delta" and _part(doc) in changes:
                continue  # replaced by the part's final text, before its done events
            if kind in _CLOSING_EVENTS:
                out += self._deltas(changes, delivered, numbers, _index(doc, "output_index"))
            if kind in TERMINAL_EVENTS and verdict:
                out += self._verdict_events(shown, changes, delivered, numbers)
                verdict = False
            out += _emit(raw, doc, _patched(doc, kind, changes), numbers)
        if verdict:
            out += self._verdict_events(shown, changes, delivered, numbers)
        return bytes(out + end.raw) if end is not None else bytes(out)

    def _verdict_events(self, shown: Presentation, changes: Mapping[Part, _Change], delivered: set[Part],
                        numbers: _Numbers) -> bytes:
        """The changed parts' last deltas, the verdict and a refusal: what goes before the end."""
        out = self._deltas(changes, delivered, numbers, None) + _encode(self._verdict(shown), numbers)
        if shown.refusal is not None:
            out += _encode(_error(shown.refusal), numbers)
        return out

    def unchecked_events(self, shown: Presentation) -> bytes:
        numbers = _Numbers(self._last_seq + 1)
        out = _encode(self._verdict(shown), numbers)
        if shown.refusal is not None:
            out += _encode(_error(shown.refusal), numbers)
        return out

    def refusal_events(self, refusal: Refusal) -> bytes:
        if self._created is None:
            return _encode(_error(refusal), _Numbers(0))
        numbers = _Numbers(0)
        failed = {**self._created, "status": "failed", "output": [],
                  "error": {"code": refusal.code, "message": refusal.message}}
        return (_encode({"type": "response.created", "response": self._created}, numbers)
                + _encode(_error(refusal), numbers)
                + _encode({"type": "response.failed", "response": failed}, numbers))

    def _verdict(self, shown: Presentation) -> dict[str, Any]:
        details = shown.details if self.strategy == "hold" else shown.late_details()
        return {"type": VERDICT_EVENT, DETAILS_FIELD: dict(details)}

    def _changes(self, shown: Presentation) -> dict[Part, _Change]:
        """The text parts whose final text differs from the upstream's: rewritten or warned
        (hold: the presentation's final contents; passthrough: the warning after the text)."""
        answers = self.answers()
        if shown.outcome == "unchecked" or not self._messages:
            return {}
        if self.strategy == "hold":
            finals = shown.final_contents(answers)
        else:
            note = shown.late_warning() or ""
            finals = tuple(a + note if shown.warns(i) else a for i, a in enumerate(answers))
        changes: dict[Part, _Change] = {}
        rendered = self._rendered
        for oi, final in zip(sorted(self._messages), finals, strict=True):
            parts = rendered.parts(oi)
            # A message without an output_text part keeps its content: adding a part mid-stream
            # would take events of its own (content_part.added), and there is no text to warn.
            for key, (text, shift) in zip(parts, place_text([rendered.text(k) for k in parts], final), strict=True):
                if text == rendered.text(key):
                    continue
                sent = self._sent.get(key, "")
                if text.startswith(sent):
                    changes[key] = _Change(text[len(sent):], text, shift)
        return changes

    def _deltas(self, changes: Mapping[Part, _Change], delivered: set[Part], numbers: _Numbers,
                output_index: int | None) -> bytes:
        """The changed parts' deltas not yet sent: those of message ``output_index`` (None: all)."""
        out = bytearray()
        for key, change in changes.items():
            if key in delivered or (output_index is not None and key[0] != output_index):
                continue
            delivered.add(key)
            if change.delta:
                out += _encode({"type": "response.output_text.delta", "item_id": self._messages.get(key[0], ""),
                                "output_index": key[0], "content_index": key[1], "delta": change.delta,
                                "logprobs": []}, numbers)
        return bytes(out)


class _Numbers:
    """Sequence numbers for re-emitted events, one more each, from ``start``."""

    def __init__(self, start: int) -> None:
        self._next = start

    def take(self) -> int:
        self._next += 1
        return self._next - 1


def _patched(doc: dict[str, Any], kind: str, changes: Mapping[Part, _Change]) -> dict[str, Any]:
    """``doc`` saying the final text of every changed part it mentions (``doc`` itself when it
    mentions none)."""
    if not changes:
        return doc
    if kind == "response.output_text.done" and _part(doc) in changes:
        return {**doc, "text": changes[_part(doc)].text}
    if kind == "response.content_part.done" and _part(doc) in changes:
        change = changes[_part(doc)]
        return {**doc, "part": with_part_text(doc["part"], change.text, change.shift)}
    if kind == "response.output_item.done" and any(oi == doc.get("output_index") for oi, _ in changes):
        return {**doc, "item": _patched_item(doc["item"], _index(doc, "output_index"), changes)}
    if kind in TERMINAL_EVENTS:
        response = dict(doc["response"])
        output = response.get("output")
        if isinstance(output, list):
            response["output"] = [_patched_item(item, i, changes) for i, item in enumerate(output)]
            if isinstance(response.get("output_text"), str):
                response["output_text"] = output_text(response["output"])
        return {**doc, "response": response}
    return doc


def _patched_item(item: Any, output_index: int, changes: Mapping[Part, _Change]) -> Any:
    if not isinstance(item, dict) or item.get("type") != "message" or not isinstance(item.get("content"), list):
        return item
    content = list(item["content"])
    for j, part in enumerate(content):
        change = changes.get((output_index, j))
        if change is not None and isinstance(part, dict):
            content[j] = with_part_text(part, change.text, change.shift)
    return {**item, "content": content}


def _events(withheld: bytes) -> list[tuple[bytes, dict[str, Any] | None]]:
    """The withheld bytes as events, each with its JSON object (None: none to read)."""
    if not withheld:
        return []
    decoder = SSEDecoder(max_event_bytes=len(withheld) + 1)
    try:
        events = decoder.feed(withheld) + decoder.flush()
    except SSEError:  # they were framed once already; kept whole if that ever fails
        return [(withheld, None)]
    return [(e.raw, _doc(e)) for e in events]


def _doc(event: SSEEvent) -> dict[str, Any] | None:
    if not event.has_data or event.is_done:
        return None
    try:
        value = json_doc.loads(event.data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _emit(raw: bytes, doc: dict[str, Any], patched: dict[str, Any], numbers: _Numbers) -> bytes:
    """An event the upstream sent: its own bytes when neither its text nor its number changes."""
    number = numbers.take()
    if patched is doc and doc.get("sequence_number") == number:
        return raw
    return encode_event(_dumps({**patched, "sequence_number": number}), event=_event_name(patched["type"]))


def _encode(doc: Mapping[str, Any], numbers: _Numbers) -> bytes:
    out = {**doc, "sequence_number": numbers.take()}
    return encode_event(_dumps(out), event=_event_name(out["type"]))


def _event_name(kind: Any) -> str | None:
    """The ``event:`` line of a re-emitted event: its type, unless that cannot be one line (a
    type with a line break is still the type in the data; the name line is only a hint)."""
    return kind if isinstance(kind, str) and "\n" not in kind and "\r" not in kind else None


def _is_verdict_event(doc: dict[str, Any]) -> bool:
    kind = doc.get("type")
    return forged.DETAILS_FIELD in doc or (isinstance(kind, str) and forged.names_verdict(kind))


def _error(refusal: Refusal) -> dict[str, Any]:
    error = {"type": refusal.error_type, "code": refusal.code, "message": refusal.message, "param": None}
    return {"type": "error", "code": refusal.code, "message": refusal.message, "param": None, "error": error}


def _dumps(doc: Mapping[str, Any]) -> str:
    return json_doc.dumps(doc)


def _seq(doc: Mapping[str, Any] | None) -> int | None:
    value = doc.get("sequence_number") if doc is not None else None
    return value if isinstance(value, int) else None


def _part(doc: Mapping[str, Any]) -> Part:
    return _index(doc, "output_index"), _index(doc, "content_index")


def _index(doc: Mapping[str, Any], name: str) -> int:
    value = doc.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BodyError("bad_response", f"{doc.get('type')} has no valid '{name}'")
    return value


def _object(doc: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = doc.get(name)
    if not isinstance(value, dict):
        raise BodyError("bad_response", f"{doc.get('type')} has no '{name}' object")
    return value


def _string(doc: Mapping[str, Any], name: str, default: str | None = None) -> str:
    value = doc.get(name, default)
    if not isinstance(value, str):
        raise BodyError("bad_response", f"{doc.get('type')} has no string '{name}'")
    return value


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        nested = error.get("error")
        if isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(nested, dict) and isinstance(nested.get("message"), str):
            return str(nested["message"])
    return "no error message"

