"""The Responses API (``POST /v1/responses``) as the scripted upstream speaks it: a request's
``input`` read as the chat-style messages the script's rules match on, and a scripted answer
written as a ``response`` object or as its semantic server-sent events (``response.created`` …
``response.completed``), field for field as the ``openai`` package's ``types/responses`` models
have them. The wire format of a test double, not a model."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

# Input item types whose ``output`` is a tool's result; read as ``role: tool`` messages.
_TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "mcp_call")


def input_problem(body: Any) -> str | None:
    """Why ``body`` is not a Responses request the API would take (None: it is): an object with
    an ``input`` string or list of items, each an object, a message with a string ``role``."""
    if not isinstance(body, Mapping) or not isinstance(body.get("input"), (str, list)):
        return "body must be an object with an input string or list"
    for i, item in enumerate(body["input"] if isinstance(body["input"], list) else []):
        if not isinstance(item, Mapping):
            return f"input[{i}] must be an object"
        if item.get("type", "message") == "message" and not isinstance(item.get("role"), str):
            return f"input[{i}] is a message without a role"
    return None


def input_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``instructions`` as a system message, a string ``input`` as one user message, message
    items as they are, tool outputs and file search results as ``role: tool`` messages."""
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        if kind == "message" and isinstance(item.get("role"), str):
            messages.append({"role": item["role"], "content": _text(item.get("content"))})
        elif kind in _TOOL_OUTPUTS:
            messages.append({"role": "tool", "content": _text(item.get("output"))})
        elif kind == "file_search_call":
            results = item.get("results") or []
            texts = [r.get("text", "") for r in results if isinstance(r, Mapping)]
            messages.append({"role": "tool", "content": "\n".join(t for t in texts if isinstance(t, str))})
    return messages


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "message", "role": "assistant", "status": status,
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}


def response_object(
    response_id: str,
    model: str,
    texts: Sequence[str],
    *,
    created_at: int,
    status: str = "completed",
    usage: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``response`` object whose output is one message item per text."""
    done = status in ("completed", "incomplete")
    return {
        "id": response_id, "object": "response", "created_at": created_at, "status": status,
        "model": model, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": None, "metadata": {}, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "temperature": 1.0, "top_p": 1.0,
        "output": [message_item(f"msg_{response_id}_{i}", t, "completed" if status == "completed" else "incomplete")
                   for i, t in enumerate(texts)] if done else [],
        "usage": dict(usage) if usage is not None and done else None,
        **(extra or {}),
    }


def response_events(
    response_id: str,
    model: str,
    texts: Sequence[str],
    pieces: Sequence[Sequence[str]],
    *,
    status: str = "completed",
    usage: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The events of a streamed response: created, in_progress, then for each message its item,
    its text part, a delta per piece of ``pieces`` and the done events, then the terminal event
    (``response.completed``, or ``response.incomplete``). Sequence numbers count from 0."""
    created_at = int(time.time())
    start = response_object(response_id, model, texts, created_at=created_at, status="in_progress")
    events: list[dict[str, Any]] = [{"type": "response.created", "response": start},
                                    {"type": "response.in_progress", "response": start}]
    for i, (text, chunks) in enumerate(zip(texts, pieces, strict=True)):
        item_id = f"msg_{response_id}_{i}"
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        where = {"item_id": item_id, "output_index": i, "content_index": 0}
        events.append({"type": "response.output_item.added", "output_index": i,
                       "item": {**message_item(item_id, "", "in_progress"), "content": []}})
        events.append({"type": "response.content_part.added", **where, "part": part})
        events += [{"type": "response.output_text.delta", **where, "delta": chunk, "logprobs": []} for chunk in chunks]
        events.append({"type": "response.output_text.done", **where, "text": text, "logprobs": []})
        events.append({"type": "response.content_part.done", **where, "part": {**part, "text": text}})
        events.append({"type": "response.output_item.done", "output_index": i,
                       "item": message_item(item_id, text, "completed" if status == "completed" else "incomplete")})
    final = response_object(response_id, model, texts, created_at=created_at, status=status, usage=usage, extra=extra)
    events.append({"type": f"response.{status}", "response": final})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def encode(event: Mapping[str, Any], broken: bool = False) -> bytes:
    """One event as OpenAI sends it (``event:`` line, ``data:`` line, blank line); ``broken``:
    the framing is malformed (no blank line, the JSON cut in half)."""
    data = json.dumps(event)
    if broken:
        return f"event: {event['type']}\ndata: {data[: len(data) // 2]}\n".encode()
    return f"event: {event['type']}\ndata: {data}\n\n".encode()
