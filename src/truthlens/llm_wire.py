"""The chat-completions wire format of :mod:`truthlens.llm`: the typed call and result, the
request body it sends, and the reply read back — a JSON completion or a streamed one (SSE).

Servers differ in what they honour (see docs/operations.md, "Real model servers"), so the body
says exactly what one call asks for: its ``max_tokens`` (always bounded: :func:`token_bound`),
its structured-output form (``json_schema``, ``json_object`` with the schema, or the schema
only in words, :data:`STRUCTURED_FORMS`) and ``stream``. A streamed reply is read chunk by
chunk so the client can close the connection the moment it gives up on a call: servers that
keep generating for a client that went away (llama.cpp does, for a non-streamed call) notice a
closed stream and stop.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# A chat reply of n choices with per-token log-probs stays well under this; a reply over it is
# an endpoint misbehaving (or hostile), not an answer worth holding in memory.
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024

# What a call of each role may generate when neither the call nor its model's ``max_tokens``
# says otherwise: every call is bounded, so no call can keep a model server busy for minutes.
# A verdict is a short JSON list, a re-ask an answer of a few sentences, ACR's samples one line.
ROLE_MAX_TOKENS: Mapping[str, int] = {
    "verdict": 256, "judge": 512, "refine": 512, "verify": 512, "expert": 512,
    "detect": 512, "confirm": 512,
    "acr_internal": 128, "acr_external": 128, "acr_extract": 256, "acr_verify": 128,
    "acr_perturb": 256, "acr_counterfactual": 128, "acr_fuse": 256,
}
DEFAULT_ROLE_MAX_TOKENS = 512

# How a call that wants a JSON reply asks for it, most to least constrained: OpenAI's
# ``json_schema``; ``json_object`` carrying the schema (llama.cpp turns it into a grammar, other
# servers at least into JSON mode); the schema in words only, the reply validated by the caller.
StructuredForm = Literal["json_schema", "json_object", "prompt"]
STRUCTURED_FORMS: tuple[StructuredForm, ...] = ("json_schema", "json_object", "prompt")
STRUCTURED_CHOICES = ("auto", *STRUCTURED_FORMS)  # a model's ``structured_output`` (auto: learn)


class LLMError(Exception):
    """A call failed for good (after retries). ``reason`` is a short metric-safe label:
    ``timeout``, ``connect``, ``http_5xx``, ``http_4xx``, ``bad_response``, ``too_large``, ``budget``,
    ``unknown_model``."""

    def __init__(self, reason: str, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status  # the HTTP status of an http_* failure


@dataclass(frozen=True, slots=True)
class JsonReply:
    """The JSON object a call wants back: a schema name and a JSON Schema (strict-mode shape)."""

    name: str
    schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatCall:
    model: str
    messages: Sequence[Mapping[str, Any]]
    role: str  # why the call is made: refine, verify, judge, acr_internal, ... (metrics label)
    n: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None  # None: the role's bound (ROLE_MAX_TOKENS or the model's)
    logprobs: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)  # passed through into the JSON body
    json_reply: JsonReply | None = None  # the reply must be this JSON object (structured output)


@dataclass(frozen=True, slots=True)
class ChatChoice:
    text: str
    token_logprobs: tuple[float, ...] | None = None  # one per generated token, when asked
    finish_reason: str | None = None

    @property
    def mean_logprob(self) -> float | None:
        if not self.token_logprobs:
            return None
        return sum(self.token_logprobs) / len(self.token_logprobs)

    @property
    def confidence(self) -> float | None:
        """exp(mean token log-prob): the sequence confidence of ACR eq. 10."""
        mean = self.mean_logprob
        return None if mean is None else math.exp(mean)


@dataclass(frozen=True, slots=True)
class ChatResult:
    model: str
    choices: tuple[ChatChoice, ...]
    latency_s: float
    response_id: str | None = None
    input_tokens: int | None = None  # the server's ``usage``, when it reports one
    output_tokens: int | None = None
    # What the client did because the server lacks a feature (``structured:json_object``,
    # ``structured:prompt``, ``sequential_samples``, ``no_logprobs``): callers name them in their
    # verdict's attributes.
    fallbacks: tuple[str, ...] = ()
    structured: StructuredForm | None = None  # how the JSON reply was asked for, when one was


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a configured model name is served (the config's ``models:`` entry, 1:1)."""

    base_url: str  # e.g. http://127.0.0.1:8000/v1
    api_key_env: str | None = None  # name of the environment variable holding the key
    timeout_s: float = 30.0  # per attempt
    max_retries: int = 2  # extra attempts after the first, on connection errors and 5xx
    served_model: str | None = None  # the name sent upstream; None: the configured name
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # a longer reply is refused (too_large), never held
    # The most tokens a call may generate, by role ("default": every role not named); a call's
    # own max_tokens is capped by it. Empty: ROLE_MAX_TOKENS.
    max_tokens: tuple[tuple[str, int], ...] = ()  # (role, bound) pairs: an Endpoint is hashable
    structured_output: str = "auto"  # one of STRUCTURED_CHOICES
    # Stream replies (internally): closing a stream is what makes servers stop generating a call
    # the processor gave up on. False for a server that cannot stream.
    stream: bool = True
    # Sampling a call to this model takes where the call sets none (temperature, top_p, seed):
    # e.g. verifiers that are the primary's own model, made to answer differently from it.
    sampling: tuple[tuple[str, float], ...] = ()  # (parameter, value) pairs


def token_bound(call: ChatCall, ep: Endpoint) -> int:
    """The ``max_tokens`` a call carries: its own, capped by its model's bound for its role; else
    that bound; else the role's default. Never unbounded."""
    bounds = dict(ep.max_tokens)
    configured = bounds.get(call.role, bounds.get("default"))
    role_default = ROLE_MAX_TOKENS.get(call.role, DEFAULT_ROLE_MAX_TOKENS)
    if call.max_tokens is None:
        return configured if configured is not None else role_default
    return call.max_tokens if configured is None else min(call.max_tokens, configured)


def schema_instruction(reply: JsonReply) -> str:
    """The reply's schema in words, for servers that cannot constrain output: it describes the
    shape (a schema, not an example), so there is no value a model could copy verbatim."""
    return ("Your reply must be one JSON object, and nothing else, that is valid against this JSON Schema: "
            + json.dumps(reply.schema, separators=(",", ":")))


def with_instruction(messages: Sequence[Mapping[str, Any]], instruction: str) -> list[Mapping[str, Any]]:
    """``messages`` with ``instruction`` added to the leading system message (chat templates that
    want one system message, first, keep working), or as a new first one."""
    out = list(messages)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0] = {**out[0], "content": f"{out[0]['content']}\n{instruction}"}
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


def request_body(call: ChatCall, served_model: str, *, max_tokens: int, n: int, stream: bool,
                 structured: StructuredForm | None, sampling: Sequence[tuple[str, float]] = ()) -> bytes:
    body: dict[str, Any] = {**dict(sampling), **call.extra}
    messages = list(call.messages)
    if call.json_reply is not None and structured is not None:
        if structured == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": call.json_reply.name, "strict": True, "schema": call.json_reply.schema}}
        else:
            if structured == "json_object":
                body["response_format"] = {"type": "json_object", "schema": call.json_reply.schema}
            messages = with_instruction(messages, schema_instruction(call.json_reply))
    body.update(model=served_model, messages=messages, n=n, stream=stream)
    if stream:  # the token counts, as a non-streamed reply has them (OpenAI's streaming option)
        body["stream_options"] = {"include_usage": True}
    for key, value in (("temperature", call.temperature), ("top_p", call.top_p)):
        if value is not None:
            body[key] = value
    body["max_tokens"] = max_tokens
    if call.logprobs:
        body["logprobs"] = True
    return json.dumps(body).encode()


def parse_result(raw: bytes, call: ChatCall, latency_s: float) -> ChatResult:
    """A JSON (not streamed) completion. Raises ``LLMError("bad_response")``."""
    try:
        payload = json.loads(raw)
        items = sorted(payload["choices"], key=lambda c: c.get("index", 0))
        choices = tuple(_parse_choice(c, call.logprobs) for c in items)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the parser goes is no completion either.
        raise LLMError("bad_response", f"{call.model}: malformed completion: {exc}") from exc
    if not choices:
        raise LLMError("bad_response", f"{call.model}: completion has no choices")
    usage = payload.get("usage") if isinstance(payload.get("usage"), Mapping) else {}
    return ChatResult(
        model=str(payload.get("model") or call.model),
        choices=choices,
        latency_s=latency_s,
        response_id=payload["id"] if isinstance(payload.get("id"), str) else None,
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _parse_choice(choice: Mapping[str, Any], want_logprobs: bool) -> ChatChoice:
    """One choice; raises TypeError/KeyError on any shape but the API's (a content that is a
    number, an object, parts without text strings): callers read ``text`` as a string."""
    content = _text(choice["message"].get("content"))
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise TypeError("finish_reason is not a string")
    logprobs = None
    if want_logprobs and isinstance(choice.get("logprobs"), Mapping):
        entries = choice["logprobs"].get("content") or []
        logprobs = tuple(float(e["logprob"]) for e in entries)
    return ChatChoice(text=content, token_logprobs=logprobs, finish_reason=finish)


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        texts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("a content part's text is not a string")
        content = "".join(texts)
    if content is not None and not isinstance(content, str):
        raise TypeError(f"message content is {type(content).__name__}, not a string")
    return content or ""


class StreamedReply:
    """A streamed completion assembled from its ``data:`` events (choices by index)."""

    def __init__(self, call: ChatCall) -> None:
        self._call = call
        self._pending = b""
        self._texts: dict[int, list[str]] = {}
        self._logprobs: dict[int, list[float]] = {}
        self._finish: dict[int, str] = {}
        self.model: str | None = None
        self.response_id: str | None = None
        self.usage: Mapping[str, Any] = {}
        self.done = False

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the body; raises ``LLMError("bad_response")`` on an event that
        is no completion chunk."""
        self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            line = line.rstrip(b"\r")
            if line.startswith(b"data:"):
                self._event(line[5:].strip())

    def _event(self, payload: bytes) -> None:
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(payload)
            if isinstance(chunk.get("error"), Mapping):  # an error reported inside the stream
                raise LLMError("bad_response", f"{self._call.model}: the stream reported an error")
            self.model = self.model or (chunk.get("model") if isinstance(chunk.get("model"), str) else None)
            if self.response_id is None and isinstance(chunk.get("id"), str):
                self.response_id = chunk["id"]
            if isinstance(chunk.get("usage"), Mapping):
                self.usage = chunk["usage"]
            for choice in chunk.get("choices") or ():
                self._choice(choice)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise LLMError("bad_response", f"{self._call.model}: malformed stream chunk: {exc}") from exc

    def _choice(self, choice: Mapping[str, Any]) -> None:
        index = int(choice.get("index", 0))
        delta = choice.get("delta") or {}
        self._texts.setdefault(index, []).append(_text(delta.get("content")))
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish[index] = finish
        if self._call.logprobs and isinstance(choice.get("logprobs"), Mapping):
            entries = choice["logprobs"].get("content") or []
            self._logprobs.setdefault(index, []).extend(float(e["logprob"]) for e in entries)

    def result(self, latency_s: float) -> ChatResult:
        if not self._texts:
            raise LLMError("bad_response", f"{self._call.model}: the stream carried no choices")
        choices = tuple(
            ChatChoice(text="".join(self._texts[i]),
                       token_logprobs=tuple(self._logprobs[i]) if i in self._logprobs else None,
                       finish_reason=self._finish.get(i))
            for i in sorted(self._texts))
        return ChatResult(model=self.model or self._call.model, choices=choices, latency_s=latency_s,
                          response_id=self.response_id, input_tokens=_count(self.usage.get("prompt_tokens")),
                          output_tokens=_count(self.usage.get("completion_tokens")))
