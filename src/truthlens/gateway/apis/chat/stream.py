"""The chat completions stream as the streamed-response phase needs it: ``chat.completion.chunk``
events accumulated into choices, ``data: [DONE]`` as the end of the answer, and what goes around
a checked answer (the warning delta and the verdict chunk after content already sent, the held
answer re-chunked, the error event of a refusal). The byte bookkeeping stays in the phase."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from truthlens.gateway.apis import forged
from truthlens.gateway.apis.chat import body as openai_body
from truthlens.gateway.apis.chat import chunks
from truthlens.gateway.apis.interface import BodyError
from truthlens.gateway.apis.sse import SSEEvent

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Presentation, Refusal, Strategy


# The most choices (``n``) and tool calls per choice a checked stream may have. The stream's
# state, the verdict chunk and a held answer's re-chunking are sized by the highest index seen,
# so an index is refused before it can allocate anything (one chunk with index 1e9 once grew a
# worker to 24 GB). The API's own ``n`` limit is 128.
MAX_STREAM_CHOICES = 128
MAX_TOOL_CALLS = 128


class ChatStream:
    """One chat completion stream (see :class:`truthlens.gateway.apis.interface.StreamCodec`)."""

    answer_complete = False  # only data: [DONE] ends a chat answer

    def __init__(self, strategy: Strategy, *, warns: bool = False) -> None:
        self.strategy = strategy
        self.accumulator = chunks.StreamAccumulator()
        # Passthrough forwards every event at once, except, on a route that warns, from the
        # first chunk that carries a ``finish_reason`` on: clients that close a choice there
        # would drop a warning delta sent after it, so the warning goes before those chunks.
        self._warns = warns and strategy == "passthrough"
        self.holding = False

    def add(self, event: SSEEvent) -> bool:
        if event.is_done:
            return True
        if event.has_data:
            chunk = self.as_chat_chunk(openai_body.event_object(event.data))
            _check_indexes(chunk)
            self.accumulator.add(chunk)
            if self._warns and not self.holding:
                self.holding = _finishes(chunk)
        return False

    def ends_answer(self, event: SSEEvent) -> bool:
        return event.is_done

    def answers(self) -> tuple[str, ...]:
        return self.accumulator.contents()

    def scrub(self, event: SSEEvent) -> SSEEvent | None:
        """None for a verdict chunk the upstream wrote (the verdict is the gateway's alone); a
        chunk that also carries answer text loses only its ``truthlens`` fields."""
        return forged.scrub_event(event, _is_verdict_chunk)

    def finish(self, shown: Presentation, withheld: bytes, end: SSEEvent | None) -> bytes:
        answers = self.answers()
        end_raw = end.raw if end is not None else b""
        if self.strategy == "passthrough":
            # The warning, then the finish chunks withheld for it, then the verdict.
            return self._warning(shown, len(answers)) + withheld + self._verdict(shown) + end_raw
        if shown.refusal is not None:
            return self.refusal_events(shown.refusal)
        if shown.outcome == "unchecked":
            # Not checked (a drain): the held events go out as they came.
            return withheld + self._verdict(shown) + end_raw
        return self.rechunk(shown.final_contents(answers), dict(shown.details))

    # The chunk shape, overridden by an API whose streams are chat's in another shape
    # (:mod:`~truthlens.gateway.apis.completions.stream`).
    def as_chat_chunk(self, chunk: dict[str, Any]) -> dict[str, Any]:
        """One event's object as a ``chat.completion.chunk`` (the accumulator's shape)."""
        return chunk

    def chunk_event(self, *, deltas: dict[int, str] | None = None, details: dict[str, Any] | None = None) -> bytes:
        """A chunk of content ``deltas`` per choice, or (none) the verdict chunk carrying ``details``."""
        return chunks.chunk_event(self.accumulator.meta, deltas=deltas, details=details)

    def rechunk(self, contents: tuple[str, ...], details: dict[str, Any]) -> bytes:
        """A held answer's whole stream, with ``contents`` and the verdict chunk."""
        acc = self.accumulator
        return chunks.rechunk(acc.meta, contents, details, finish_reasons=acc.finish_reasons(), usage=acc.usage,
                              source=acc)

    def unchecked_events(self, shown: Presentation) -> bytes:
        return self._verdict(shown)

    def refusal_events(self, refusal: Refusal) -> bytes:
        return openai_body.error_event(refusal.status, refusal.message, refusal.error_type, refusal.code)

    def _warning(self, shown: Presentation, n_answers: int) -> bytes:
        """The warning delta after content that already went out (it can only follow it now)."""
        note = shown.late_warning()
        deltas = {i: note for i in range(n_answers) if shown.warns(i)} if note is not None else {}
        return self.chunk_event(deltas=deltas) if deltas else b""

    def _verdict(self, shown: Presentation) -> bytes:
        """The verdict chunk, and the refusal (too late to withhold what went out, but the
        client learns of it)."""
        out = self.chunk_event(details=dict(shown.late_details()))
        if shown.refusal is not None:
            out += self.refusal_events(shown.refusal)
        return out


def _finishes(chunk: dict[str, Any]) -> bool:
    """Whether a chunk closes a choice (carries a ``finish_reason``)."""
    choices = chunk.get("choices")
    return isinstance(choices, list) and any(
        isinstance(c, dict) and c.get("finish_reason") is not None for c in choices)


def _is_verdict_chunk(chunk: dict[str, Any]) -> bool:
    """A chunk that is only a verdict: a top-level ``truthlens`` and no choice to carry."""
    return forged.DETAILS_FIELD in chunk and not chunk.get("choices")


def _check_indexes(chunk: dict[str, object]) -> None:
    """``BodyError`` (``bad_response``) for a choice or tool call index over its bound."""
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return  # the accumulator says what is wrong with it
    for pos, choice in enumerate(choices):
        if not isinstance(choice, dict):
            continue
        _bounded(choice.get("index", pos), MAX_STREAM_CHOICES, f"choices[{pos}].index")
        delta = choice.get("delta")
        calls = delta.get("tool_calls") if isinstance(delta, dict) else None
        for k, call in enumerate(calls if isinstance(calls, list) else ()):
            if isinstance(call, dict):
                _bounded(call.get("index", k), MAX_TOOL_CALLS, f"choices[{pos}].delta.tool_calls[{k}].index")


def _bounded(index: object, limit: int, where: str) -> None:
    if isinstance(index, int) and not isinstance(index, bool) and index >= limit:
        raise BodyError(
            "bad_response", f"stream chunk {where} is {index}, over the gateway's limit of {limit - 1}")
