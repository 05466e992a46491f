"""What the third adversarial round's end-to-end tests share: the routes, the hostile bodies an
upstream sends, and the client's reading of a stream (WHATWG SSE: one leading BOM stripped, the
``openai`` SDKs' ``[DONE]`` prefix) with every verdict a JSON reader would find in it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from fuzzing import names_verdict, whatwg_events
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision

from truthlens.testing import responses_upstream

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
DEEP = "[" * 2000 + "]" * 2000  # nested past every interpreter's default recursion limit

DECISIONS = [
    decision("block", route_header="block", path_prefix="/v1/", actions=["header", "block"]),
    decision("closed", route_header="closed", path_prefix="/v1/", fail_policy="closed", actions=["header", "body"],
             streaming="passthrough"),
    decision("closed_hold", route_header="closed-hold", path_prefix="/v1/", streaming="hold", fail_policy="closed",
             actions=["header", "body"]),
    decision("hold", route_header="hold", path_prefix="/v1/", streaming="hold", actions=["header", "body"]),
    decision("off", route_header="off", path_prefix="/v1/", enabled=False),
    decision("warn", priority=10, path_prefix="/v1/", actions=["header", "body"], streaming="passthrough"),
]


def chunk(content: str | None = None, *, finish: str | None = None, **delta: Any) -> bytes:
    """One ``chat.completion.chunk`` event for choice 0."""
    if content is not None:
        delta["content"] = content
    doc = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    return f"data: {json.dumps(doc)}\n\n".encode()


def chat_stream(text: str, *, done: bytes = b"data: [DONE]\n\n") -> bytes:
    words = text.split(" ")
    pieces = [w + " " for w in words[:-1]] + [words[-1]]
    return (chunk(role="assistant") + b"".join(chunk(p) for p in pieces) + chunk(finish="stop") + done)


def completion(message: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
                       **extra})


def responses_stream(text: str, *, extra: Sequence[bytes] = ()) -> bytes:
    """A Responses API stream of ``text`` (``extra`` events after its terminal event)."""
    words = text.split(" ")
    pieces = [w + " " for w in words[:-1]] + [words[-1]]
    events = responses_upstream.response_events("resp_1", "m", [text], [pieces])
    return b"".join(responses_upstream.encode({**e, "sequence_number": n}) for n, e in enumerate(events)) + b"".join(
        extra)


def ask_chat(stack: Stack, question: str, route: str | None = None, *, stream: bool = True,
             context: Sequence[str] = tuple(CONTEXT), **extra: Any) -> RawResponse:
    return stack.raw("POST", CHAT, chat_body(question, context=context, stream=stream, **extra),
                     {"x-test-route": route} if route else {}, timeout_s=120)


def ask_responses(stack: Stack, question: str, route: str | None = None, *, stream: bool = True,
                  context: Sequence[str] = tuple(CONTEXT)) -> RawResponse:
    body: dict[str, Any] = {"model": "m", "input": question, "stream": stream}
    if context:
        body["truthlens_context"] = list(context)
    return stack.raw("POST", RESPONSES, body, {"x-test-route": route} if route else {}, timeout_s=120)


def client_events(body: bytes) -> list[tuple[str | None, str]]:
    """The events a WHATWG ``EventSource`` / ``TextDecoder`` client reads, as (event, data), up
    to the ``openai`` SDKs' end of stream (data starting with ``[DONE]``)."""
    events = whatwg_events(body)
    done = next((i for i, (_, data) in enumerate(events) if data.startswith("[DONE]")), len(events))
    return events[:done]


def use(stack: Stack, script: Sequence[dict[str, Any]]) -> Stack:
    """The shared stack with these routes and ``script`` (other suites may have changed both)."""
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(script)
    return stack


def verdicts(body: bytes) -> list[Any]:
    """Every verdict a client finds in a stream: each ``truthlens`` field of a JSON object at
    any depth (decoded, so escapes count), an event typed ``truthlens.*``; data a JSON reader
    with no depth limit might read and that names the verdict counts as ``"unreadable"``."""
    found: list[Any] = []
    for name, data in client_events(body):
        try:
            doc = json.loads(data)
        except RecursionError:
            if names_verdict(data):
                found.append("unreadable")
            continue
        except ValueError:
            continue
        if name is not None and name.startswith("truthlens") and not (
                isinstance(doc, dict) and doc.get("type") == "truthlens.verdict"):
            found.append(f"event:{name}")
        found.extend(_fields(doc))
    return found


def json_verdicts(body: bytes) -> list[Any]:
    """The verdicts a JSON reader finds in a JSON body (any depth; see :func:`verdicts`)."""
    try:
        return _fields(json.loads(body))
    except RecursionError:
        return ["unreadable"] if names_verdict(body.decode('utf-8', 'replace')) else []


def _fields(value: Any) -> list[Any]:
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "truthlens" in item:
                found.append(item["truthlens"])
            elif isinstance(item.get("type"), str) and item["type"].startswith("truthlens"):
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def statuses(found: Sequence[Any]) -> list[Any]:
    return [v.get("status") if isinstance(v, dict) else v for v in found]


def _objects(body: bytes) -> Iterator[dict[str, Any]]:
    """The JSON object of each event a client reads (others skipped)."""
    for _, data in client_events(body):
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, dict):
            yield doc


def text_of(body: bytes) -> str:
    """The answer text a client renders of a chat or Responses stream."""
    out = []
    for doc in _objects(body):
        if doc.get("type") == "response.output_text.delta":
            out.append(str(doc.get("delta")))
        for choice in doc.get("choices") or []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                out.append(delta["content"])
    return "".join(out)


def error_codes(body: bytes) -> list[str]:
    return [str(doc["error"].get("code")) for doc in _objects(body) if isinstance(doc.get("error"), dict)]


__all__ = ["CHAT", "CONTEXT", "DECISIONS", "DEEP", "GROUNDED", "HALLUCINATED", "RESPONSES"]
