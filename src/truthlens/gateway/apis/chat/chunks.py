"""Chat completion stream chunks (``chat.completion.chunk``): parse one, accumulate a stream's
chunks into its choices, and write chunks (a warning delta, the verdict chunk, a held answer
re-chunked). The stream codec that decides when: :mod:`~truthlens.gateway.apis.chat.stream`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from truthlens.gateway.apis.chat.body import (
    RESPONSE_TEXT_PARTS,
    answer_text,
    content_text,
    decode_json,
    encode_json,
)
from truthlens.gateway.apis.interface import BodyError
from truthlens.gateway.apis.sse import DONE_EVENT


@dataclass(frozen=True, slots=True)
class StreamMeta:
    """What every chunk of one completion repeats."""

    id: str
    model: str
    created: int
    system_fingerprint: str | None = None


@dataclass(slots=True)
class _ChoiceState:
    content: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None


def parse_chunk(data: str | bytes) -> dict[str, Any]:
    """The JSON of one ``data:`` event of a chat completion stream."""
    doc = decode_json(data, "stream chunk")
    if not isinstance(doc, dict):
        raise BodyError("bad_response", f"stream chunk is a JSON {type(doc).__name__}, not an object")
    return doc


class StreamAccumulator:
    """Rebuilds the choices of a streamed completion from its ``chat.completion.chunk`` objects."""

    def __init__(self) -> None:
        self._meta: StreamMeta | None = None
        self._choices: dict[int, _ChoiceState] = {}
        self.usage: dict[str, Any] | None = None
        self.chunks = 0

    def add(self, data: Mapping[str, Any]) -> None:
        choices = data.get("choices")
        if not isinstance(choices, list):
            # An upstream error object in the stream, or something else: not a chunk.
            raise BodyError("bad_response", "stream chunk has no 'choices' list")
        self.chunks += 1
        if self._meta is None:
            created = data.get("created")
            self._meta = StreamMeta(
                id=str(data.get("id", "")),
                model=str(data.get("model", "")),
                created=created if isinstance(created, int) else int(time.time()),
                system_fingerprint=data.get("system_fingerprint"),
            )
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        for pos, choice in enumerate(choices):
            if not isinstance(choice, dict):
                raise BodyError("bad_response", f"stream chunk choices[{pos}] is not an object")
            index = choice.get("index", pos)
            if not isinstance(index, int) or index < 0:
                raise BodyError("bad_response", f"stream chunk choices[{pos}].index is not an integer")
            state = self._choices.get(index)
            if state is None:
                state = self._choices[index] = _ChoiceState()
            delta = choice.get("delta")
            if isinstance(delta, dict):
                content = delta.get("content")
                if isinstance(content, str):
                    state.content.append(content)
                elif content is not None:
                    # A list of text parts too: the text a client renders of it is checked.
                    state.content.append(delta_text(content, f"stream chunk choices[{pos}].delta.content"))
                refusal = delta.get("refusal")
                if isinstance(refusal, str):
                    state.refusal.append(refusal)
                tool_calls = delta.get("tool_calls")
                if isinstance(tool_calls, list):
                    _merge_tool_calls(state.tool_calls, tool_calls)
            finish = choice.get("finish_reason")
            if finish is not None:
                state.finish_reason = finish

    @property
    def meta(self) -> StreamMeta:
        if self._meta is None:
            return StreamMeta(id="chatcmpl-truthlens", model="", created=int(time.time()))
        return self._meta

    @property
    def n(self) -> int:
        return max(self._choices) + 1 if self._choices else 0

    def contents(self) -> tuple[str, ...]:
        """Each choice's text: its content, or its refusal when it has no content (a refusal
        is text the client is shown, and checked as the answer)."""
        return tuple(answer_text("".join(self._state(i).content), self.refusal(i)) for i in range(self.n))

    def content_pieces(self, index: int) -> list[str]:
        """The content deltas of choice ``index`` so far, as received (the live list: it grows)."""
        state = self._choices.get(index)
        return state.content if state is not None else []

    def refusal_pieces(self, index: int) -> list[str]:
        """The refusal deltas of choice ``index`` so far, as received (the live list: it grows)."""
        state = self._choices.get(index)
        return state.refusal if state is not None else []

    def finish_reasons(self) -> tuple[str | None, ...]:
        return tuple(self._state(i).finish_reason for i in range(self.n))

    def tool_calls(self, index: int) -> list[dict[str, Any]]:
        return [self._state(index).tool_calls[k] for k in sorted(self._state(index).tool_calls)]

    def refusal(self, index: int) -> str | None:
        parts = self._state(index).refusal
        return "".join(parts) if parts else None

    def _state(self, index: int) -> _ChoiceState:
        return self._choices.get(index) or _ChoiceState()


def delta_text(content: Any, where: str = "stream chunk delta.content") -> str:
    """The text a client renders of a delta's content list of parts (its ``text`` and
    ``output_text`` parts, joined as a whole answer's are)."""
    return content_text(content, where, "bad_response", RESPONSE_TEXT_PARTS)


def _merge_tool_calls(calls: dict[int, dict[str, Any]], deltas: list[Any]) -> None:
    # Tool call deltas carry id/type/name once, then argument fragments to concatenate.
    for pos, delta in enumerate(deltas):
        if not isinstance(delta, dict):
            continue
        key = delta.get("index", pos)
        if not isinstance(key, int) or key < 0:
            raise BodyError("bad_response", f"stream chunk tool_calls[{pos}].index is not a non-negative integer")
        call = calls.setdefault(key, {"index": key, "function": {"arguments": ""}})
        for name in ("id", "type"):
            if isinstance(delta.get(name), str):
                call[name] = delta[name]
        fn = delta.get("function")
        if isinstance(fn, dict):
            if isinstance(fn.get("name"), str):
                call["function"]["name"] = fn["name"]
            if isinstance(fn.get("arguments"), str):
                call["function"]["arguments"] += fn["arguments"]


def _chunk(meta: StreamMeta, choices: list[dict[str, Any]], extra: Mapping[str, Any] | None = None) -> bytes:
    doc: dict[str, Any] = {
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
    }
    if meta.system_fingerprint is not None:
        doc["system_fingerprint"] = meta.system_fingerprint
    doc["choices"] = choices
    if extra:
        doc.update(extra)
    return b"data: " + encode_json(doc) + b"\n\n"


def chunk_event(
    meta: StreamMeta,
    *,
    deltas: Mapping[int, str] | None = None,
    content: str | None = None,
    n: int = 1,
    finish_reason: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> bytes:
    """One SSE event holding a ``chat.completion.chunk``.

    ``deltas``: a content delta per choice index; ``content``: the same delta for choices
    ``0..n-1`` (e.g. a warning); ``finish_reason``: set on each of those choices. With none of
    them the chunk has ``choices: []`` (the verdict chunk), carrying ``details`` as ``truthlens``.
    """
    if deltas is not None and content is not None:
        raise ValueError("pass deltas or content, not both")
    per_choice: Mapping[int, str | None]
    if deltas is not None:
        per_choice = deltas
    elif content is not None or finish_reason is not None:
        per_choice = {i: content for i in range(n)}
    else:
        per_choice = {}
    choices = [
        {
            "index": i,
            "delta": {} if text is None else {"content": text},
            "logprobs": None,
            "finish_reason": finish_reason,
        }
        for i, text in per_choice.items()
    ]
    return _chunk(meta, choices, None if details is None else {"truthlens": details})


def rechunk(
    meta: StreamMeta,
    contents: Sequence[str],
    details: Mapping[str, Any] | None = None,
    *,
    finish_reasons: Sequence[str | None] | None = None,
    usage: Mapping[str, Any] | None = None,
    source: StreamAccumulator | None = None,
) -> bytes:
    """A whole valid SSE body for ``contents``: a role chunk, a content chunk, a finish chunk,
    then the usage chunk (when given), the verdict chunk (when ``details``) and ``[DONE]``.

    ``source``: the accumulated original stream, whose tool calls and refusals are carried over
    so a rewrite of the text loses nothing else.
    """
    n = len(contents)
    out = [_chunk(meta, [{"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                          "finish_reason": None} for i in range(n)])]
    content_choices = []
    for i, text in enumerate(contents):
        delta: dict[str, Any] = {"content": text}
        if source is not None:
            calls = source.tool_calls(i)
            if calls:
                delta["tool_calls"] = calls
            refusal = source.refusal(i)
            if refusal is not None:
                delta["refusal"] = refusal
        content_choices.append({"index": i, "delta": delta, "logprobs": None, "finish_reason": None})
    out.append(_chunk(meta, content_choices))
    reasons = list(finish_reasons) if finish_reasons is not None else [None] * n
    out.append(_chunk(meta, [{"index": i, "delta": {}, "logprobs": None,
                              "finish_reason": reasons[i] or "stop"} for i in range(n)]))
    if usage is not None:
        out.append(_chunk(meta, [], {"usage": usage}))
    if details is not None:
        out.append(_chunk(meta, [], {"truthlens": details}))
    out.append(DONE_EVENT)
    return b"".join(out)
