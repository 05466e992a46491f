"""The legacy completions stream (``text_completion`` chunks, ``choices[].text``, ending in
``data: [DONE]``) as the streamed-response phases need it. It is the chat completions stream in
another shape, so the chat codecs (:mod:`~truthlens.gateway.apis.chat.stream`,
:mod:`~truthlens.gateway.apis.chat.progressive`) do the work: each event is read as the chat
chunk it means, and every chunk the gateway writes (a warning, the verdict chunk
``{"choices": [], "truthlens": ...}``, a held answer re-sent) is written as a completion chunk.
"""

from __future__ import annotations

from typing import Any

from truthlens.gateway.apis.chat.body import encode_json
from truthlens.gateway.apis.chat.chunks import StreamAccumulator
from truthlens.gateway.apis.chat.progressive import ProgressiveChatStream
from truthlens.gateway.apis.chat.stream import ChatStream
from truthlens.gateway.apis.sse import DONE_EVENT

_OBJECT = "text_completion"


class _CompletionShape:
    """The completion chunk shape of a chat codec (a mixin: first in the bases)."""

    accumulator: StreamAccumulator

    def as_chat_chunk(self, chunk: dict[str, Any]) -> dict[str, Any]:
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return chunk  # the accumulator says what is wrong with it
        as_chat = [
            {**{k: v for k, v in c.items() if k != "text"}, "delta": {"content": c["text"]}}
            if isinstance(c, dict) and isinstance(c.get("text"), str) else c
            for c in choices
        ]
        return {**chunk, "choices": as_chat}

    def chunk_event(self, *, deltas: dict[int, str] | None = None, details: dict[str, Any] | None = None) -> bytes:
        choices = [_choice(i, text, None) for i, text in (deltas or {}).items()]
        return self._event(choices, None if details is None else {"truthlens": details})

    def rechunk(self, contents: tuple[str, ...], details: dict[str, Any]) -> bytes:
        """One chunk with every choice's whole text and its finish reason, the usage chunk (when
        the upstream sent one), the verdict chunk, ``[DONE]``."""
        reasons = self.accumulator.finish_reasons()
        choices = [_choice(i, text, (reasons[i] if i < len(reasons) else None) or "stop")
                   for i, text in enumerate(contents)]
        out = self._event(choices)
        if self.accumulator.usage is not None:
            out += self._event([], {"usage": self.accumulator.usage})
        return out + self._event([], {"truthlens": details}) + DONE_EVENT

    def event_text(self, doc: dict[str, Any]) -> str:
        return str(doc["choices"][0]["text"])

    def with_text(self, doc: dict[str, Any], text: str) -> bytes:
        choice = {**doc["choices"][0], "text": text}
        return b"data: " + encode_json({**doc, "choices": [choice]}) + b"\n\n"

    def _event(self, choices: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> bytes:
        meta = self.accumulator.meta
        doc: dict[str, Any] = {"id": meta.id, "object": _OBJECT, "created": meta.created, "model": meta.model,
                               "choices": choices}
        if meta.system_fingerprint is not None:
            doc["system_fingerprint"] = meta.system_fingerprint
        if extra:
            doc.update(extra)
        return b"data: " + encode_json(doc) + b"\n\n"


def _choice(index: int, text: str, finish_reason: str | None) -> dict[str, Any]:
    return {"index": index, "text": text, "logprobs": None, "finish_reason": finish_reason}


class CompletionsStream(_CompletionShape, ChatStream):
    """One completions stream (see :class:`truthlens.gateway.apis.interface.StreamCodec`)."""


class ProgressiveCompletionsStream(_CompletionShape, ProgressiveChatStream):
    """One completions stream released sentence by sentence."""
