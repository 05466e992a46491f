"""OpenAI chat completion bodies: parse requests and responses, render rewrites and OpenAI-shaped
error bodies; the JSON helpers both APIs share. Stream chunks: :mod:`~truthlens.gateway.apis.chat.chunks`.

Hot path: bodies are decoded once with the standard ``json`` module, and a response nothing
changes in is handed back as the original bytes, never re-serialised. Rewrites keep every
field they do not touch (unknown ones included).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from truthlens.gateway.apis import json_doc
from truthlens.gateway.apis.context.settings import ContextSettings as ContextSettings  # re-exported
from truthlens.gateway.apis.context.sources import gather
from truthlens.gateway.apis.forged import DETAILS_FIELD
from truthlens.gateway.apis.interface import BodyError, Rewrite, WarningSpec
from truthlens.gateway.apis.sse import encode_event
from truthlens.modes.base import GroundedQuery

# The chat completions request's own fields (OpenAI's reference): the context extension field
# may not be one of them, or the gateway would strip it from every request (check-config says so).
REQUEST_KEYS = frozenset({
    "model", "messages", "stream", "stream_options", "temperature", "top_p", "n", "stop", "max_tokens",
    "max_completion_tokens", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
    "user", "tools", "tool_choice", "parallel_tool_calls", "functions", "function_call", "response_format", "seed",
    "service_tier", "store", "metadata", "modalities", "audio", "prediction", "reasoning_effort",
    "web_search_options", "verbosity", "prompt_cache_key", "safety_identifier",
})
# Request fields forwarded to re-asks (refine, verify, ...) so they sample like the client asked.
SAMPLING_KEYS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "stop",
)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str
    messages: tuple[Mapping[str, Any], ...]  # as forwarded upstream
    question: str  # text of the last user message ("" when there is none)
    passages: tuple[str, ...]
    stream: bool
    n: int
    sampling: Mapping[str, Any]
    # The body to send upstream when the extension field was stripped; None: send the original.
    forward_body: bytes | None = None
    include_usage: bool = False  # stream_options.include_usage
    context_source: str = ""  # where the passages came from (:mod:`~truthlens.gateway.apis.context.sources`)
    near_template: str = ""  # no context: the template the request came closest to ("" when none)

    def grounded_query(self) -> GroundedQuery:
        return GroundedQuery(
            model=self.model,
            question=self.question,
            passages=self.passages,
            messages=self.messages,
            sampling=self.sampling,
        )


def decode_json(body: bytes | str, what: str) -> Any:
    """``body`` as JSON, nested at most :data:`json_doc.MAX_DEPTH` deep; anything else is a
    :class:`BodyError` (``malformed_json``) naming ``what``."""
    try:
        return json_doc.loads(body)
    except ValueError as exc:  # JSONError and UnicodeDecodeError
        raise BodyError("malformed_json", f"{what} is not valid JSON: {exc}") from None


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON, as every rewritten body is sent."""
    return json_doc.dumps(value).encode("utf-8")


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """A chat request decoded and validated once: what routing reads (model, question) and the
    document each route's :class:`ContextSettings` then reads its passages from."""

    doc: Mapping[str, Any]
    model: str
    question: str  # text of the last user message ("" when there is none)
    stream: bool
    n: int
    include_usage: bool

    def read(self, ctx: ContextSettings) -> ChatRequest:
        """:func:`read_chat_request` (the request as a route with context settings ``ctx`` sees it)."""
        return read_chat_request(self, ctx)


def decode_chat_request(body: bytes, *, max_bytes: int | None = None) -> DecodedRequest:
    """Decode ``body``; over ``max_bytes`` it is refused before any JSON is parsed."""
    if max_bytes is not None and len(body) > max_bytes:
        raise BodyError("too_large", f"request body is {len(body)} bytes, over the limit of {max_bytes}")
    doc = decode_json(body, "request body")
    if not isinstance(doc, dict):
        raise BodyError("not_an_object", f"request body is a JSON {type(doc).__name__}, not an object")
    messages = doc.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BodyError("bad_messages", "'messages' must be a non-empty list")
    question = ""
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise BodyError("bad_messages", f"messages[{i}] must be an object with a string 'role'")
        if msg["role"] == "user":
            question = _message_text(msg, i)

    model = doc.get("model", "")
    if not isinstance(model, str):
        raise BodyError("bad_field", "'model' must be a string")
    stream = doc.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise BodyError("bad_field", "'stream' must be a boolean")
    n = doc.get("n", 1)
    if n is None:
        n = 1
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BodyError("bad_field", "'n' must be a positive integer")
    stream_options = doc.get("stream_options")
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    return DecodedRequest(doc=doc, model=model, question=question, stream=stream, n=n, include_usage=include_usage)


_READ_ROLES = frozenset({"user", "tool", "system", "developer"})


def read_chat_request(decoded: DecodedRequest, ctx: ContextSettings) -> ChatRequest:
    """The request as a route with context settings ``ctx`` sees it; ``decoded`` is not changed."""
    doc = decoded.doc
    messages: list[dict[str, Any]] = doc["messages"]
    field, forward_body = read_extension(doc, ctx)
    # The messages context may be in (a malformed one is a bad request, as the upstream would say).
    texts = [(msg["role"], _message_text(msg, i)) for i, msg in enumerate(messages) if msg["role"] in _READ_ROLES]
    tools = [text for role, text in texts if role == "tool" and text.strip()] if ctx.tool_messages else []
    found = gather(ctx, field=field, tools=tools, messages=texts, question=decoded.question)
    return ChatRequest(
        model=decoded.model,
        messages=tuple(messages),
        question=found.question,
        passages=found.passages,
        stream=decoded.stream,
        n=decoded.n,
        sampling={k: doc[k] for k in SAMPLING_KEYS if doc.get(k) is not None},
        forward_body=forward_body,
        include_usage=decoded.include_usage,
        context_source=found.source,
        near_template=found.near_template,
    )


def parse_chat_request(body: bytes, ctx: ContextSettings, *, max_bytes: int | None = None) -> ChatRequest:
    """:func:`decode_chat_request` then :func:`read_chat_request`."""
    return read_chat_request(decode_chat_request(body, max_bytes=max_bytes), ctx)


def _message_text(msg: Mapping[str, Any], i: int) -> str:
    return content_text(msg.get("content"), f"messages[{i}].content", "bad_messages")


_CHAT_TEXT_PARTS = frozenset({"text"})
# An answer's parts: chat's ``text``, and ``output_text`` (the Responses API's, which some servers
# put in chat answers too): a client renders both.
RESPONSE_TEXT_PARTS = frozenset({"text", "output_text"})


def answer_text(content: str, refusal: Any) -> str:
    """The text a client is shown of an answer: its content, or its refusal when the content is
    blank (a refusal-only answer is text too, and checked as such), or both, the refusal after a
    blank line, when each has text (a client shows both fields)."""
    if not (isinstance(refusal, str) and refusal.strip()):
        return content
    if not content.strip():
        return refusal
    return f"{content}{REFUSAL_GAP}{refusal}"


REFUSAL_GAP = "\n\n"  # between an answer's content and its refusal, when it has both


def content_text(content: Any, where: str, reason: str, text_parts: frozenset[str] = _CHAT_TEXT_PARTS) -> str:
    """A message content as text: a string, the parts of a part list whose type is one of
    ``text_parts`` joined, or "" (null); anything else is a :class:`BodyError` ``reason``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for j, part in enumerate(content):
            if not isinstance(part, dict):
                raise BodyError(reason, f"{where}[{j}] must be an object")
            if part.get("type") in text_parts:
                text = part.get("text")
                if not isinstance(text, str):
                    raise BodyError(reason, f"{where}[{j}].text must be a string")
                texts.append(text)
        return "\n".join(texts)
    raise BodyError(reason, f"{where} must be a string, a list of parts or null")


def read_extension(doc: Mapping[str, Any], ctx: ContextSettings) -> tuple[list[str], bytes | None]:
    """The passages of the request's context extension field and the request without it (None:
    it has none, the original body goes upstream)."""
    field = ctx.extension_field
    if field is None or field not in doc:
        return [], None
    return extension_passages(doc[field], field), encode_json({k: v for k, v in doc.items() if k != field})


def extension_passages(value: Any, name: str) -> list[str]:
    """The passages of the context extension field ``name``: a list of strings or text objects,
    or one string (one passage: the commonest slip of a client, read as what it means)."""
    if value is None:  # "no context" stated explicitly; the field is still stripped
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list):
        raise BodyError("bad_context", f"'{name}' must be a list of strings or {{\"text\": ...}} objects, "
                                       "or one string")
    passages: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, dict):
            item = item.get("text", item.get("content"))
        if not isinstance(item, str):
            raise BodyError(
                "bad_context", f"'{name}[{i}]' must be a string or an object with a string 'text' or 'content'"
            )
        if item.strip():
            passages.append(item)
    return passages


# ---------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class ChatResponse:
    raw: dict[str, Any]
    contents: tuple[str, ...]  # by choice index; null content reads as ""
    body: bytes  # the bytes parsed, handed back when nothing changes
    positions: tuple[int, ...] = ()  # choice index → position in raw["choices"]

    def render(self, change: Rewrite) -> bytes:
        """:func:`render_chat_response` of this response."""
        return render_chat_response(self, contents=change.contents, warning=change.warning,
                                    details=change.details, warn_indices=change.warn_indices)


def read_choices(body: bytes, text_of: Callable[[int, dict[str, Any]], str]
                 ) -> tuple[dict[str, Any], tuple[str, ...], tuple[int, ...]]:
    """An OpenAI response body's document, each choice's text in ``index`` order (``text_of``:
    the text of the choice at a list position, raising :class:`BodyError`) and the list position
    of each index. The indices must be 0..n-1, each once (any order), or the body is refused."""
    doc = decode_json(body, "response body")
    if not isinstance(doc, dict):
        raise BodyError("bad_response", f"response body is a JSON {type(doc).__name__}, not an object")
    choices = doc.get("choices")
    if not isinstance(choices, list):
        raise BodyError("bad_response", "response has no 'choices' list")
    by_index: dict[int, int] = {}
    texts: dict[int, str] = {}
    for pos, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise BodyError("bad_response", f"choices[{pos}] is not an object")
        index = choice.get("index", pos)
        if not isinstance(index, int) or isinstance(index, bool) or index in by_index:
            raise BodyError("bad_response", f"choices[{pos}].index is missing, not an integer or repeated")
        texts[index] = text_of(pos, choice)
        by_index[index] = pos
    if sorted(by_index) != list(range(len(by_index))):
        raise BodyError("bad_response", f"choice indices {sorted(by_index)} are not 0..{len(by_index) - 1}")
    return doc, tuple(texts[i] for i in range(len(texts))), tuple(by_index[i] for i in range(len(by_index)))


def parse_chat_response(body: bytes) -> ChatResponse:
    def text_of(pos: int, choice: dict[str, Any]) -> str:
        message = choice.get("message")
        if not isinstance(message, dict):
            raise BodyError("bad_response", f"choices[{pos}].message is not an object")
        return answer_text(content_text(message.get("content"), f"choices[{pos}].message.content",
                                        "bad_response", RESPONSE_TEXT_PARTS), message.get("refusal"))

    doc, contents, positions = read_choices(body, text_of)
    return ChatResponse(raw=doc, contents=contents, body=body, positions=positions)


def render_chat_response(
    resp: ChatResponse,
    *,
    contents: Sequence[str | None] | None = None,
    warning: WarningSpec | None = None,
    details: Mapping[str, Any] | None = None,
    warn_indices: frozenset[int] | None = None,
) -> bytes:
    """The response with new contents (None per choice: keep), the warning on each choice in
    ``warn_indices`` (None: every choice) and ``details`` as the field ``truthlens``; a
    ``truthlens`` field the upstream wrote never survives (the verdict is the gateway's alone).
    Returns the original bytes when nothing changes."""
    def write(doc: dict[str, Any], finals: Mapping[int, str]) -> None:
        choices = list(doc["choices"])
        for index, text in finals.items():
            pos = resp.positions[index]
            choices[pos] = {**choices[pos], "message": {**choices[pos]["message"], "content": text}}
        doc["choices"] = choices

    return render_answers(resp.raw, resp.body, resp.contents, Rewrite(contents, warning, details, warn_indices), write)


def render_answers(
    raw: Mapping[str, Any],
    body: bytes,
    originals: Sequence[str],
    change: Rewrite,
    write: Callable[[dict[str, Any], Mapping[int, str]], None],
) -> bytes:
    """What every JSON answer's rendering shares: ``body`` (its document ``raw``, its answers
    ``originals``) when ``change`` changes nothing and the upstream wrote no verdict; else the
    document without the upstream's ``truthlens`` field, ``write`` called with each changed
    answer's final text (by index), and the change's details as the field ``truthlens``. The
    upstream's ``truthlens`` fields go wherever they sit (a reader may look for a verdict in any
    object)."""
    finals = changed_texts(originals, change)
    forged = forged_details(raw, body)
    if not finals and change.details is None and not forged:
        return body
    doc = dict(json_doc.without_key(raw, DETAILS_FIELD) if forged else raw)
    if finals:
        write(doc, finals)
    if change.details is not None:
        doc[DETAILS_FIELD] = change.details
    return encode_json(doc)


def forged_details(raw: Mapping[str, Any], body: bytes) -> bool:
    """Whether the upstream wrote a ``truthlens`` field anywhere in ``body`` (its document
    ``raw``); the bytes are searched first, so a body that never names it is not walked."""
    return mentions(body, DETAILS_FIELD) and json_doc.has_key(raw, DETAILS_FIELD)


def changed_texts(originals: Sequence[str], change: Rewrite) -> dict[int, str]:
    """The answers ``change`` rewrites or warns, by index, each with its final text."""
    contents, warning = change.contents, change.warning
    if contents is not None and len(contents) != len(originals):
        raise ValueError(f"{len(contents)} contents for {len(originals)} answers")
    finals: dict[int, str] = {}
    for index, original in enumerate(originals):
        new = contents[index] if contents is not None else None
        warn = warning is not None and (change.warn_indices is None or index in change.warn_indices)
        if new is None and not warn:
            continue
        text = original if new is None else new
        finals[index] = warning.apply(text) if warn and warning is not None else text
    return finals


def without_field(body: bytes, name: str, *, strict: bool = False) -> bytes | None:
    """``body`` (a JSON object) without its top-level field ``name``, or None when it has no
    such field or is not a JSON object (:func:`json_doc.without_member`: any depth). Used to strip
    the context extension field from a request that cannot be checked (over the route's limit, a
    malformed field): it never reaches the upstream, whatever its shape. ``strict``: a body that
    mentions ``name`` but is not JSON raises :class:`BodyError` (``malformed_json``) instead of
    reading as "no field"."""
    try:
        return json_doc.without_member(body, name)
    except json_doc.JSONError as exc:
        if strict:
            raise BodyError("malformed_json", f"request body is not valid JSON ({exc}) and mentions '{name}', "
                            "which the gateway cannot remove from it") from None
        return None


def mentions(body: bytes, name: str) -> bool:
    """Whether ``body`` may hold the JSON key ``name``: spelt out, or with ASCII ``\\u00XX``
    escapes (``"truthlens\\u005fcontext"`` is the same key to a JSON reader)."""
    return json_doc.mentions(body, name)




# ---------------------------------------------------------------------------- events


def event_object(data: str) -> dict[str, Any]:
    """The JSON object of one SSE event's data. Not JSON: ``ValueError`` (the stream is broken,
    reason ``sse_framing``); nested past :data:`json_doc.MAX_DEPTH` or JSON but not an object:
    :class:`BodyError` ``bad_response``."""
    try:
        value = json_doc.loads(data)
    except json_doc.TooDeep as exc:
        raise BodyError("bad_response", f"an SSE event's data is {exc}") from None
    if not isinstance(value, dict):
        raise BodyError("bad_response", "an SSE event's data is not a JSON object")
    return value


# ---------------------------------------------------------------------------- errors


def _error_doc(status: int, message: str, type: str | None, code: str | None) -> dict[str, Any]:
    if type is None:
        type = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def error_json(status: int, message: str, type: str | None = None, code: str | None = None) -> bytes:
    """An OpenAI error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return encode_json(_error_doc(status, message, type, code))


def error_event(status: int, message: str, type: str | None = None, code: str | None = None) -> bytes:
    """The same error as one SSE event (for a stream whose headers already went out)."""
    return encode_event(json_doc.dumps(_error_doc(status, message, type, code)))
