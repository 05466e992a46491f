"""The chat completions stream as progressive release needs it (a held answer released sentence
by sentence, :mod:`truthlens.gateway.exchange.phases.response_progressive`): the text each chunk
adds to the one answer, a content chunk cut in two, a warning as a content chunk, and the
verdict chunk (or the refusal's error event) in place of ``data: [DONE]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from truthlens.gateway.apis.chat import body as openai_body
from truthlens.gateway.apis.chat import chunks
from truthlens.gateway.apis.chat.stream import ChatStream

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Presentation
    from truthlens.gateway.apis.sse import SSEEvent


class ProgressiveChatStream(ChatStream):
    """One chat completion stream released sentence by sentence (see
    :class:`truthlens.gateway.apis.interface.ProgressiveCodec`).

    The text followed is the one the whole-answer check reads (:func:`~.body.answer_text`):
    the content deltas, or the refusal deltas of an answer whose content is blank. The first
    field to bring text is the one followed; an answer whose other field brings text too (its
    text is then content, a blank line, refusal: no longer one growing string) is held from
    that event on, like a second answer, and released by the end's verdict."""

    def __init__(self) -> None:
        super().__init__("progressive")
        self._field: str | None = None  # "content" or "refusal": the delta field followed
        self._seen = {"content": 0, "refusal": 0}  # deltas of choice 0 already handed out, per field
        self._one_field = True  # False once both fields brought text

    def text_added(self) -> str | None:
        """The text the events since the last call added; None once there is a second choice,
        or once both the content and the refusal have text."""
        acc = self.accumulator
        if acc.n > 1 or not self._one_field:
            return None
        added = {}
        for name, pieces in (("content", acc.content_pieces(0)), ("refusal", acc.refusal_pieces(0))):
            added[name] = "".join(pieces[self._seen[name]:])
            self._seen[name] = len(pieces)
        brought = [name for name, text in added.items() if text]
        if self._field is None and len(brought) == 1:
            self._field = brought[0]
        if any(name != self._field for name in brought):
            self._one_field = False
            return None
        return added[self._field] if self._field is not None else ""

    def cut_event(self, event: SSEEvent, keep: int) -> tuple[bytes, bytes]:
        """``event`` (a chunk adding text to the followed field) as two chunks: its first
        ``keep`` characters, then the rest (a content list of parts becomes its text)."""
        doc = openai_body.event_object(event.data)
        text = self.event_text(doc)
        return self.with_text(doc, text[:keep]), self.with_text(doc, text[keep:])

    def event_text(self, doc: dict[str, Any]) -> str:
        """The text a chunk adds to the followed field (overridden with the chunk shape)."""
        value = doc["choices"][0]["delta"][self._field or "content"]
        return value if isinstance(value, str) else chunks.delta_text(value)

    def with_text(self, doc: dict[str, Any], text: str) -> bytes:
        """A chunk ``doc`` carrying ``text`` in the followed field instead."""
        return _with_field(doc, self._field or "content", text)

    def text_event(self, text: str) -> bytes:
        """A content chunk of ``text`` (a warning inside the answer)."""
        return self.chunk_event(deltas={0: text})

    def verdict_before(self, shown: Presentation, details: dict[str, Any], end: SSEEvent | None) -> bytes:
        """The verdict chunk, then ``end``; refused: the verdict chunk and the error event, which
        end the stream (no ``data: [DONE]``, as a held block)."""
        out = self.chunk_event(details=details)
        if shown.refusal is not None:
            return out + self.refusal_events(shown.refusal)
        return out + (end.raw if end is not None else b"")


def _with_field(doc: dict[str, Any], name: str, text: str) -> bytes:
    choice = doc["choices"][0]
    changed = {**choice, "delta": {**choice["delta"], name: text}}
    return b"data: " + openai_body.encode_json({**doc, "choices": [changed]}) + b"\n\n"
