"""The Responses API stream as progressive release needs it (a held answer released sentence by
sentence, :mod:`truthlens.gateway.exchange.phases.response_progressive`): the one message's text
so far, an ``output_text.delta`` cut in two, and the verdict (or a refusal's ``error`` and
``response.failed``) in place of the terminal event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from truthlens.gateway.apis.chat.body import event_object
from truthlens.gateway.apis.forged import DETAILS_FIELD
from truthlens.gateway.apis.responses.rendered import Part
from truthlens.gateway.apis.responses.stream import (
    VERDICT_EVENT,
    ResponsesStream,
    _doc,
    _dumps,
    _emit,
    _encode,
    _error,
    _Numbers,
    _seq,
    _string,
)
from truthlens.gateway.apis.sse import SSEEvent, encode_event

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Presentation


class ProgressiveResponsesStream(ResponsesStream):
    """One Responses API stream released sentence by sentence (see
    :class:`truthlens.gateway.apis.interface.ProgressiveCodec`)."""

    def __init__(self) -> None:
        super().__init__("progressive")
        self._rendered.added = []
        self._part: Part | None = None  # the text part followed

    def text_added(self) -> str | None:
        """The text the events since the last call added to the one message's one text part;
        None once the stream has text anywhere else (another message or part)."""
        added = self._rendered.added
        assert added is not None
        out = []
        for part, text in added:
            if self._part is None:
                self._part = part
            elif part != self._part:
                self._part = (-1, -1)  # never a real part: from here on, always None
            out.append(text)
        added.clear()
        return None if self._part == (-1, -1) else "".join(out)

    def cut_event(self, event: SSEEvent, keep: int) -> tuple[bytes, bytes]:
        """``event`` (an ``output_text.delta``) as two deltas: its first ``keep`` characters, then
        the rest (both keep its sequence number)."""
        doc = event_object(event.data)
        delta = _string(doc, "delta")
        return (encode_event(_dumps({**doc, "delta": delta[:keep]}), event=event.event),
                encode_event(_dumps({**doc, "delta": delta[keep:]}), event=event.event))

    def text_event(self, text: str) -> bytes:
        """An ``output_text.delta`` of ``text`` on the last text part seen."""
        oi = max(self._messages) if self._messages else 0
        parts = self._rendered.parts(oi)
        ci = parts[-1][1] if parts else 0
        return _encode({"type": "response.output_text.delta", "item_id": self._messages.get(oi, ""),
                        "output_index": oi, "content_index": ci, "delta": text, "logprobs": []},
                       _Numbers(self._last_seq + 1))

    def verdict_before(self, shown: Presentation, details: dict[str, Any], end: SSEEvent | None) -> bytes:
        """The verdict event in ``end``'s place (``end`` follows it, one number on), or the
        verdict, ``error`` and ``response.failed`` instead of ``end`` when refused."""
        doc = _doc(end) if end is not None else None
        start = _seq(doc)
        numbers = _Numbers(start if start is not None else self._last_seq + 1)
        out = _encode({"type": VERDICT_EVENT, DETAILS_FIELD: details}, numbers)
        if shown.refusal is not None:
            out += _encode(_error(shown.refusal), numbers)
            failed = {**(self._created or {}), "status": "failed",
                      "error": {"code": shown.refusal.code, "message": shown.refusal.message}}
            return out + _encode({"type": "response.failed", "response": failed}, numbers)
        if doc is None or end is None:
            return out + (end.raw if end is not None else b"")
        return out + _emit(end.raw, doc, doc, numbers)
