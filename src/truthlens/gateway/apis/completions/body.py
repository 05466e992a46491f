"""The legacy completions API (``POST /v1/completions``) as the gateway reads it: a request's
``prompt`` read as a chat request's one user message would be (the context extension field,
then the templates and layouts the route reads, :mod:`~truthlens.gateway.apis.context.sources`),
and a response's ``choices[].text`` as its answers.

The API is still what completion-model clients call: LlamaIndex's ``OpenAILike`` with its
defaults (``is_chat_model=False``), LangChain's ``OpenAI`` LLM, vLLM and llama.cpp servers.

A request the gateway cannot read as one prompt is refused reading with a reason the exchange
reports (``skipped``/``unavailable`` with it, never silently): a prompt of token ids has no
text, several prompts get answers that go with different prompts (one check reads one
context), and ``echo`` puts the prompt itself in the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from truthlens.gateway.apis.chat.body import (
    SAMPLING_KEYS,
    ChatRequest,
    decode_json,
    read_choices,
    read_extension,
    render_answers,
)
from truthlens.gateway.apis.context.settings import ContextSettings
from truthlens.gateway.apis.context.sources import gather
from truthlens.gateway.apis.interface import BodyError, Rewrite

# The legacy completions request's own fields (OpenAI's reference; see chat's REQUEST_KEYS for why).
REQUEST_KEYS = frozenset({
    "model", "prompt", "suffix", "stream", "stream_options", "temperature", "top_p", "n", "stop", "max_tokens",
    "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "echo", "best_of", "user", "seed",
})


@dataclass(frozen=True, slots=True)
class DecodedCompletion:
    """A completions request decoded once: what routing reads (model, the prompt as question)."""

    doc: Mapping[str, Any]
    model: str
    question: str  # the prompt
    stream: bool
    n: int
    include_usage: bool

    def read(self, ctx: ContextSettings) -> ChatRequest:
        """The request as a route with context settings ``ctx`` sees it: the prompt is the one
        user message (re-asks of the standard and premium modes send it so)."""
        field, forward_body = read_extension(self.doc, ctx)
        found = gather(ctx, field=field, tools=[], messages=[("user", self.question)], question=self.question)
        return ChatRequest(
            model=self.model,
            messages=({"role": "user", "content": self.question},),
            question=found.question,
            passages=found.passages,
            stream=self.stream,
            n=self.n,
            sampling={k: self.doc[k] for k in SAMPLING_KEYS if self.doc.get(k) is not None},
            forward_body=forward_body,
            include_usage=self.include_usage,
            context_source=found.source,
            near_template=found.near_template,
        )


def decode_completion_request(body: bytes, *, max_bytes: int | None = None) -> DecodedCompletion:
    """Decode ``body``; over ``max_bytes`` it is refused before any JSON is parsed."""
    if max_bytes is not None and len(body) > max_bytes:
        raise BodyError("too_large", f"request body is {len(body)} bytes, over the limit of {max_bytes}")
    doc = decode_json(body, "request body")
    if not isinstance(doc, dict):
        raise BodyError("not_an_object", f"request body is a JSON {type(doc).__name__}, not an object")
    model = doc.get("model", "")
    if not isinstance(model, str):
        raise BodyError("bad_field", "'model' must be a string")
    prompt = _prompt(doc.get("prompt"))
    stream = doc.get("stream", False)
    stream = False if stream is None else stream
    if not isinstance(stream, bool):
        raise BodyError("bad_field", "'stream' must be a boolean")
    n = doc.get("n", 1)
    n = 1 if n is None else n
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BodyError("bad_field", "'n' must be a positive integer")
    if doc.get("echo") is True:
        # The answer would begin with the prompt, context and all: read as an answer, it would
        # be checked as the model's words.
        raise BodyError("bad_field", "'echo': true puts the prompt in the answer; such a completion is not checked")
    options = doc.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    return DecodedCompletion(doc=doc, model=model, question=prompt, stream=stream, n=n, include_usage=include_usage)


def _prompt(value: Any) -> str:
    """The one prompt's text: a string, or a list holding one string."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(p, str) for p in value):
        raise BodyError("bad_field", f"'prompt' holds {len(value)} prompts; their answers go with different "
                                     "prompts, and one check reads one context (send one prompt per request)")
    if isinstance(value, list) and value and all(isinstance(p, (int, list)) for p in value):
        raise BodyError("bad_field", "'prompt' is token ids, which carry no text to read a context from")
    raise BodyError("bad_field", "'prompt' must be a string (or a list of one string)")


# ---------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class CompletionResponse:
    raw: dict[str, Any]
    contents: tuple[str, ...]  # by choice index
    body: bytes
    positions: tuple[int, ...] = ()  # choice index → position in raw["choices"]

    def render(self, change: Rewrite) -> bytes:
        """The response with ``change`` written into each changed choice's ``text``."""
        def write(doc: dict[str, Any], finals: Mapping[int, str]) -> None:
            choices = list(doc["choices"])
            for index, text in finals.items():
                pos = self.positions[index]
                choices[pos] = {**choices[pos], "text": text}
            doc["choices"] = choices

        return render_answers(self.raw, self.body, self.contents, change, write)


def parse_completion_response(body: bytes) -> CompletionResponse:
    def text_of(pos: int, choice: dict[str, Any]) -> str:
        text = choice.get("text")
        if text is None:
            return ""
        if not isinstance(text, str):
            raise BodyError("bad_response", f"choices[{pos}].text is not a string")
        return text

    doc, texts, positions = read_choices(body, text_of)
    return CompletionResponse(raw=doc, contents=texts, body=body, positions=positions)
