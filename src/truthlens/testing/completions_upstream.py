"""The legacy completions API (``POST /v1/completions``) as the scripted upstream speaks it: a
request's ``prompt`` read as the one user message the script's rules match on, and a scripted
answer written as a ``text_completion`` object or as its server-sent chunks (``choices[].text``
deltas, a finish chunk, an optional usage chunk, ``data: [DONE]``), field for field as the
``openai`` package's ``types/completion`` models have them. The wire format of a test double,
not a model."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

from truthlens.testing.script import Reply, message_text, tokens_of
from truthlens.testing.wire import send, write_events


def prompt_problem(body: Any) -> str | None:
    """Why ``body`` is not a completions request (None: it is): an object whose ``prompt`` is a
    string or a non-empty list of strings."""
    prompt = body.get("prompt") if isinstance(body, Mapping) else None
    if isinstance(prompt, str) or (isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt)):
        return None
    return "body must be an object with a prompt string or list of strings"


def prompt_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The prompt (each prompt of a list) as a user message."""
    prompt = body["prompt"]
    return [{"role": "user", "content": p} for p in ([prompt] if isinstance(prompt, str) else prompt)]


def completion_object(completion_id: str, model: str, texts: Sequence[str], finish_reason: str,
                      usage: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": completion_id, "object": "text_completion", "created": int(time.time()), "model": model,
            "choices": [{"index": i, "text": t, "logprobs": None, "finish_reason": finish_reason}
                        for i, t in enumerate(texts)],
            "usage": dict(usage)}


def completion_events(completion_id: str, model: str, pieces: Sequence[Sequence[str]], finish_reason: str,
                      usage: Mapping[str, Any] | None) -> list[bytes]:
    """A chunk per piece of each choice's text, a finish chunk per choice, the usage chunk
    (when asked for), ``data: [DONE]``."""
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        doc = {"id": completion_id, "object": "text_completion", "created": created, "model": model,
               "choices": choices, **extra}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    events = [chunk([{"index": i, "text": p, "logprobs": None, "finish_reason": None}])
              for i, texts in enumerate(pieces) for p in texts]
    events += [chunk([{"index": i, "text": "", "logprobs": None, "finish_reason": finish_reason}])
               for i in range(len(pieces))]
    if usage is not None:
        events.append(chunk([], usage=dict(usage)))
    return [*events, b"data: [DONE]\n\n"]


async def answer(request: web.Request, reply: Reply, body: Mapping[str, Any], completion_id: str,
                 texts: Sequence[str]) -> web.StreamResponse:
    """The scripted ``texts`` as a completion (or its stream, when the request asks for one)."""
    if reply.raw_body is not None:
        return await send(request, reply, reply.raw_body, reply.content_type or "application/json")
    model = str(body.get("model", ""))
    prompt_tokens = sum(len(tokens_of(message_text(m))) for m in prompt_messages(body))
    completion_tokens = sum(len(tokens_of(t)) for t in texts)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    if body.get("stream"):
        pieces = [["".join(toks[j:j + reply.chunk_tokens]) for j in range(0, len(toks), reply.chunk_tokens)]
                  for toks in map(tokens_of, texts)]
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return await write_events(request, reply, completion_events(
            completion_id, model, pieces, reply.finish_reason, usage if wants_usage else None))
    payload = completion_object(completion_id, model, texts, reply.finish_reason, usage)
    return await send(request, reply, json.dumps(payload).encode(), reply.content_type or "application/json")
