"""The chat completions stream as progressive release needs it (a held answer released sentence
by sentence, :mod:`truthlens.gateway.exchange.phases.response_progressive`): the text each chunk
adds to the one answer, a content chunk cut in two, a warning as a content chunk, and the
verdict chunk (or the refusal's error event) in place of ``data: [DONE]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from truthlens.gateway.apis.chat import body as openai_body
from truthlens.gateway.apis.chat.stream import ChatStream

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Presentation
    from truthlens.gateway.apis.sse import SSEEvent


class ProgressiveChatStream(ChatStream):
    """One chat completion stream released sentence by sentence (see
    :class:`truthlens.gateway.apis.interface.ProgressiveCodec`)."""

    def __init__(self) -> None:
        super().__init__("progressive")
        self._seen = 0  # content deltas of choice 0 already handed out

    def text_added(self) -> str | None:
        """The text the events since the last call added; None once there is a second choice."""
        if self.accumulator.n > 1:
            return None
        pieces = self.accumulator.content_pieces(0)
        new = pieces[self._seen:]
        self._seen = len(pieces)
        return "".join(new)

    def cut_event(self, event: SSEEvent, keep: int) -> tuple[bytes, bytes]:
        """``event`` (a content chunk) as two chunks: its first ``keep`` characters, then the rest."""
        doc = openai_body.event_object(event.data)
        content = self.event_text(doc)
        return self.with_text(doc, content[:keep]), self.with_text(doc, content[keep:])

    def event_text(self, doc: dict[str, Any]) -> str:
        """The text a content chunk adds (overridden with the chunk shape)."""
        return str(doc["choices"][0]["delta"]["content"])

    def with_text(self, doc: dict[str, Any], text: str) -> bytes:
        """A content chunk ``doc`` carrying ``text`` instead."""
        return _with_content(doc, text)

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


def _with_content(doc: dict[str, Any], content: str) -> bytes:
    choice = doc["choices"][0]
    changed = {**choice, "delta": {**choice["delta"], "content": content}}
    return b"data: " + openai_body.encode_json({**doc, "choices": [changed]}) + b"\n\n"
