"""OpenAI Responses API bodies (``POST /v1/responses``): read a request's question, grounding
passages and forward body; read a response's answers and write rewrites, warnings and the
verdict back into it.

Field names and item types are those of the ``openai`` package's ``types/responses`` models.
Requests: ``input`` is a string (one user message) or a list of items; ``instructions`` is the
system prompt. Grounding passages come from the context extension field, tool results
(``function_call_output``, ``custom_tool_call_output`` and ``mcp_call`` outputs, each
``file_search_call`` result's text; the route's ``tool_messages``), else a template the route
reads in the user's ``input`` text or in ``instructions`` and system / developer messages
(:mod:`~truthlens.gateway.apis.context.sources`), else, with the route's ``system_messages``,
their paragraphs.
Responses: each ``output`` item of type ``message`` is one answer (as chat's choices are), its
text the ``output_text`` parts joined (and parts of type ``text``, which clients render as text:
they are read and checked like ``output_text`` parts, never reported checked unread). A JSON
response's top-level ``output_text`` is what many clients read instead of ``output``: when it
says something else than ``output``'s ``output_text`` parts joined (what the SDKs compute), it
is checked as an answer of its own, after the messages (index ``len(messages)``), so a
hallucination in either is found. Bodies are decoded once; a response nothing changes in is
handed back as the original bytes; rewrites keep every field they do not touch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from truthlens.gateway.apis.chat.body import (
    content_text,
    decode_json,
    read_extension,
    render_answers,
)
from truthlens.gateway.apis.context.settings import ContextSettings
from truthlens.gateway.apis.context.sources import gather
from truthlens.gateway.apis.interface import BodyError, Rewrite
from truthlens.modes.base import GroundedQuery

# The Responses request's own fields (OpenAI's reference; see chat's REQUEST_KEYS for why).
REQUEST_KEYS = frozenset({
    "model", "input", "instructions", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls",
    "temperature", "top_p", "top_logprobs", "max_output_tokens", "max_tool_calls", "previous_response_id",
    "conversation", "reasoning", "text", "truncation", "store", "metadata", "user", "include", "background",
    "service_tier", "prompt", "prompt_cache_key", "safety_identifier",
})
# Input item types whose ``output`` is a tool's result (a passage, like chat's tool messages).
TOOL_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "mcp_call"})
# Content part types that carry text in an input message (assistant turns echo ``output_text``).
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_SAMPLING_KEYS = ("temperature", "top_p")
# Content part types of an output message whose text is the answer.
ANSWER_PARTS = frozenset({"output_text", "text"})


@dataclass(frozen=True, slots=True)
class InputItem:
    """One ``input`` item as the gateway reads it, its texts validated once."""

    kind: Literal["message", "tool_output", "other"]
    role: str = ""  # a message's role
    texts: tuple[str, ...] = ()  # a message's text; a tool output's text; each file search result's


@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    model: str
    question: str  # text of the last user message ("" when there is none)
    passages: tuple[str, ...]
    stream: bool
    # The conversation as chat messages (instructions first), for the modes' re-asks.
    messages: tuple[Mapping[str, Any], ...]
    sampling: Mapping[str, Any]
    forward_body: bytes | None = None  # the body without the context extension field; None: the original
    context_source: str = ""  # where the passages came from (:mod:`~truthlens.gateway.apis.context.sources`)
    near_template: str = ""  # no context: the template the request came closest to ("" when none)

    def grounded_query(self) -> GroundedQuery:
        return GroundedQuery(
            model=self.model, question=self.question, passages=self.passages,
            messages=self.messages, sampling=self.sampling,
        )


@dataclass(frozen=True, slots=True)
class DecodedResponsesRequest:
    """A Responses request decoded and validated once (see :func:`decode_responses_request`)."""

    doc: Mapping[str, Any]
    model: str
    question: str
    stream: bool
    instructions: str
    items: tuple[InputItem, ...]

    def read(self, ctx: ContextSettings) -> ResponsesRequest:
        """:func:`read_responses_request`."""
        return read_responses_request(self, ctx)


def decode_responses_request(body: bytes, *, max_bytes: int | None = None) -> DecodedResponsesRequest:
    """Decode ``body``; over ``max_bytes`` it is refused before any JSON is parsed. Raises
    :class:`BodyError` (``too_large``, ``malformed_json``, ``not_an_object``, ``bad_messages``
    for an ``input`` that is not a string or a list of items, ``bad_field``)."""
    if max_bytes is not None and len(body) > max_bytes:
        raise BodyError("too_large", f"request body is {len(body)} bytes, over the limit of {max_bytes}")
    doc = decode_json(body, "request body")
    if not isinstance(doc, dict):
        raise BodyError("not_an_object", f"request body is a JSON {type(doc).__name__}, not an object")
    items = _input_items(doc.get("input"))
    question = ""
    for item in items:
        if item.kind == "message" and item.role == "user":
            question = item.texts[0]
    model = doc.get("model", "")
    if not isinstance(model, str):
        raise BodyError("bad_field", "'model' must be a string")
    stream = doc.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise BodyError("bad_field", "'stream' must be a boolean")
    instructions = doc.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise BodyError("bad_field", "'instructions' must be a string")
    return DecodedResponsesRequest(doc=doc, model=model, question=question, stream=bool(stream),
                                   instructions=instructions or "", items=items)


def read_responses_request(decoded: DecodedResponsesRequest, ctx: ContextSettings) -> ResponsesRequest:
    """The request as a route with context settings ``ctx`` sees it; ``decoded`` is not changed."""
    doc = decoded.doc
    field, forward_body = read_extension(doc, ctx)
    tools = [t for item in decoded.items if item.kind == "tool_output" for t in item.texts if t.strip()] \
        if ctx.tool_messages else []
    messages: list[Mapping[str, Any]] = [{"role": "system", "content": decoded.instructions}] \
        if decoded.instructions else []
    messages += [{"role": item.role, "content": item.texts[0]} for item in decoded.items if item.kind == "message"]
    found = gather(ctx, field=field, tools=tools, messages=[(m["role"], m["content"]) for m in messages],
                   question=decoded.question)
    sampling = {k: doc[k] for k in _SAMPLING_KEYS if doc.get(k) is not None}
    if isinstance(doc.get("max_output_tokens"), int):
        sampling["max_tokens"] = doc["max_output_tokens"]  # the re-asks speak chat completions
    return ResponsesRequest(
        model=decoded.model, question=found.question, passages=found.passages, stream=decoded.stream,
        messages=tuple(messages), sampling=sampling, forward_body=forward_body, context_source=found.source,
        near_template=found.near_template,
    )


def parse_responses_request(body: bytes, ctx: ContextSettings, *, max_bytes: int | None = None) -> ResponsesRequest:
    """:func:`decode_responses_request` then :func:`read_responses_request`."""
    return read_responses_request(decode_responses_request(body, max_bytes=max_bytes), ctx)


def _input_items(value: Any) -> tuple[InputItem, ...]:
    if value is None:  # the conversation is the server's (previous_response_id, conversation)
        return ()
    if isinstance(value, str):
        return (InputItem("message", "user", (value,)),)
    if not isinstance(value, list):
        raise BodyError("bad_messages", "'input' must be a string or a list of input items")
    return tuple(_input_item(item, f"input[{i}]") for i, item in enumerate(value))


def _input_item(item: Any, where: str) -> InputItem:
    if not isinstance(item, dict):
        raise BodyError("bad_messages", f"{where} must be an object")
    kind = item.get("type", "message")  # an easy input message may leave its type out
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str):
            raise BodyError("bad_messages", f"{where} is a message without a string 'role'")
        return InputItem("message", role, (_text(item.get("content"), f"{where}.content"),))
    if kind in TOOL_OUTPUT_TYPES:
        return InputItem("tool_output", texts=(_text(item.get("output"), f"{where}.output"),))
    if kind == "file_search_call":
        results = item.get("results")
        if results is None:
            return InputItem("tool_output")
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise BodyError("bad_messages", f"{where}.results must be a list of objects")
        return InputItem("tool_output", texts=tuple(
            _text(r.get("text"), f"{where}.results[{j}].text") for j, r in enumerate(results)))
    return InputItem("other")


def _text(content: Any, where: str) -> str:
    return content_text(content, where, "bad_messages", _TEXT_PARTS)


# ---------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class MessageText:
    """Where one answer lives in a response: its ``message`` item and text parts."""

    position: int  # index in ``output``
    parts: tuple[int, ...]  # indices of its output_text / text parts in the item's ``content``
    texts: tuple[str, ...]  # each part's text

    @property
    def text(self) -> str:
        return "".join(self.texts)


@dataclass(frozen=True, slots=True)
class ResponsesResponse:
    raw: dict[str, Any]
    # One answer per message item, in output order; then the top-level output_text when it
    # says something else (see ``divergent``).
    contents: tuple[str, ...]
    body: bytes  # the bytes parsed, handed back when nothing changes
    messages: tuple[MessageText, ...] = ()
    divergent: bool = False  # the top-level output_text differs from output's and is the last answer

    def render(self, change: Rewrite) -> bytes:
        """:func:`render_responses_response` of this response."""
        return render_responses_response(self, change)


def parse_responses_response(body: bytes) -> ResponsesResponse:
    """A Responses API ``response`` object; reason ``bad_response`` for anything else (a failed
    response included: it carries no answer)."""
    doc = decode_json(body, "response body")
    if not isinstance(doc, dict):
        raise BodyError("bad_response", f"response body is a JSON {type(doc).__name__}, not an object")
    if doc.get("status") == "failed":
        raise BodyError("bad_response", f"the upstream's response failed: {_error_message(doc.get('error'))}")
    messages = message_texts(doc.get("output"), "output")
    # No message but other output (function calls): one answer with no text, skipped as such.
    contents = tuple(m.text for m in messages) or no_text_answer(doc["output"])
    top = doc.get("output_text")
    divergent = isinstance(top, str) and top != output_text(doc["output"])
    if isinstance(top, str) and divergent:
        contents += (top,)
    return ResponsesResponse(raw=doc, contents=contents, body=body, messages=messages, divergent=divergent)


def no_text_answer(output: list[Any]) -> tuple[str, ...]:
    """The answers of an output with no message item: one without text when it has other items
    (function or tool calls: the gateway skips them, ``no_text``), none when it is empty."""
    return ("",) if output else ()


def message_texts(output: Any, where: str) -> tuple[MessageText, ...]:
    """The ``message`` items of a response's ``output`` list and their text parts."""
    if not isinstance(output, list):
        raise BodyError("bad_response", f"response has no '{where}' list")
    messages = []
    for pos, item in enumerate(output):
        if not isinstance(item, dict):
            raise BodyError("bad_response", f"{where}[{pos}] is not an object")
        if item.get("type") != "message":
            continue
        content = item.get("content") or []
        if not isinstance(content, list):
            raise BodyError("bad_response", f"{where}[{pos}].content is not a list")
        parts, texts = [], []
        for j, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") in ANSWER_PARTS:
                text = part.get("text")
                if not isinstance(text, str):
                    raise BodyError("bad_response", f"{where}[{pos}].content[{j}].text is not a string")
                parts.append(j)
                texts.append(text)
        messages.append(MessageText(pos, tuple(parts), tuple(texts)))
    return tuple(messages)


def render_responses_response(resp: ResponsesResponse, change: Rewrite) -> bytes:
    """The response with ``change`` written into each changed answer's text parts (and into the
    top-level ``output_text`` when the upstream sent one: recomputed from ``output``, or, when it
    was divergent, its own answer's final text) and its details as the
    field ``truthlens``; an upstream-written ``truthlens`` field never survives. The original
    bytes when nothing changes."""
    def write(doc: dict[str, Any], finals: Mapping[int, str]) -> None:
        output = list(doc["output"])
        for index, text in finals.items():
            if index == len(resp.messages):  # the divergent top-level output_text, an answer of its own
                doc["output_text"] = text
                continue
            message = resp.messages[index]
            output[message.position] = with_text(output[message.position], message, text)
        doc["output"] = output
        if isinstance(doc.get("output_text"), str) and not resp.divergent:
            doc["output_text"] = output_text(output)

    return render_answers(resp.raw, resp.body, resp.contents, change, write)


def with_text(item: Mapping[str, Any], message: MessageText, text: str) -> dict[str, Any]:
    """The message ``item`` saying ``text`` (see :func:`place_text`)."""
    out = dict(item)
    content = list(item.get("content") or [])
    placed = place_text(message.texts, text)
    if not message.parts:
        content.append({"type": "output_text", "text": text, "annotations": []})
    for j, (new, shift) in zip(message.parts, placed, strict=True):
        content[j] = with_part_text(content[j], new, shift)
    out["content"] = content
    return out


def with_part_text(part: Mapping[str, Any], text: str, shift: int | None) -> dict[str, Any]:
    """An ``output_text`` part saying ``text``; its annotations moved by ``shift`` characters
    (None: dropped, they point into text that is gone)."""
    out = dict(part)
    out["text"] = text
    annotations = part.get("annotations")
    if isinstance(annotations, list) and shift != 0:
        out["annotations"] = [] if shift is None else [_shifted(a, shift) for a in annotations]
    return out


def place_text(old: Sequence[str], new: str) -> list[tuple[str, int | None]]:
    """``new`` spread over the ``output_text`` parts that said ``old`` (joined, the answer): each
    part's text and how far its annotations move (None: they are dropped). A prepended warning
    goes into the first part, an appended one into the last, anything else replaces the first
    part's text and empties the others. ``[]`` when there are no parts."""
    if not old:
        return []
    joined = "".join(old)
    if new == joined:
        return [(t, 0) for t in old]
    if new.endswith(joined):
        prefix = new[: len(new) - len(joined)]
        return [(prefix + old[0], len(prefix)), *((t, 0) for t in old[1:])]
    if new.startswith(joined):
        return [*((t, 0) for t in old[:-1]), (old[-1] + new[len(joined):], 0)]
    return [(new, None), *(("", None) for _ in old[1:])]


def output_text(output: Sequence[Any]) -> str:
    """The SDK's ``output_text``: every ``output_text`` part of every message item, joined."""
    return "".join(
        part["text"]
        for item in output if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str)
    )


def _shifted(annotation: Any, shift: int) -> Any:
    if not isinstance(annotation, dict):
        return annotation
    return {k: v + shift if k in ("start_index", "end_index", "index") and isinstance(v, int) else v
            for k, v in annotation.items()}


def _error_message(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else "no error message"
