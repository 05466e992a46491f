"""Fail-closed means closed on every path, and no judge reply can game a verdict.

- A chunked answer (no content-length) larger than Envoy buffers, on a ``fail_policy: closed``
  route: an explicit 502, never the unchecked answer with a 200.
- Over the worker's stream cap (``gateway.max_streams``), a fail-closed chat or Responses route
  is refused (503 ``worker_overloaded``) before the upstream is asked; fail-open routes still
  get the answer, marked unavailable.
- The cascade's confirmer: a reply whose content is a number, or JSON nested past the parser's
  depth (as content or as the whole completion), or over the reply size bound, leaves the
  encoder's verdict standing (a block route still blocks); one quoting only text the answer
  lacks clears nothing; one that quotes some text the answer lacks leaves the fact check's
  findings it did not quote standing.
- ``backend: llm``: a judge quoting only text absent from the answer is "could not check", not clean.
- Premium: ``x-truthlens-consensus`` is not ``true`` when no verifier's verdict could be read.

Real: Envoy, gRPC, the processor, the shipped encoder in ONNX Runtime, the LLM client, HTTP.
Scripted: the upstream LLM, and the verifier / span-detector models behind the same scripted
OpenAI-compatible server (``truthlens.testing.upstream``; its span judge is a deterministic rule).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision
from shipped_inputs import require_shipped_model
from span_detector_stack import SCRIPT as SPAN_SCRIPT
from span_detector_stack import SPAN_MODEL, SpanDetectorStack, ask, content, running, wait_for_metric

from truthlens.modes.prompts import VERDICT_MARKER
from truthlens.testing import launch

pytestmark = pytest.mark.envoy

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MIB = 1024 * 1024
SENTENCE = "The Eiffel Tower is in Paris. "

DECISIONS = [
    decision("hold", route_header="hold", streaming="hold", actions=["header", "body"]),
    decision("closed", route_header="closed", path_prefix="/v1/", fail_policy="closed", actions=["header", "body"]),
    decision("chat", priority=10, path_prefix="/v1/", actions=["header", "body"]),
]
SCRIPT = [
    {"name": "chunked", "match": {"user": "chunked"},
     "reply": {"content": SENTENCE, "repeat": 9 * MIB // len(SENTENCE), "chunked": True}},
    {"name": "slow", "match": {"user": "slow-stream"}, "reply": {"content": HALLUCINATED, "chunk_delay_s": 0.3}},
    {"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}},
]


@pytest.fixture
def closed(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    yield stack


def _post(stack: Stack, path: str, body: dict[str, Any], route: str | None = None) -> RawResponse:
    return stack.raw("POST", path, body, {"x-test-route": route} if route else {}, timeout_s=120)


def test_a_chunked_answer_over_envoys_buffer_on_a_fail_closed_route_is_refused(closed: Stack) -> None:
    before = closed.metric("truthlens_errors_total", reason="too_large")
    resp = _post(closed, CHAT, chat_body("chunked", context=CONTEXT), "closed")
    assert resp.status == 502  # the upstream's answer could not be checked: never a 200 with it
    assert resp.json()["error"]["code"] == "too_large"
    assert SENTENCE.encode() not in resp.body
    assert closed.metric("truthlens_errors_total", reason="too_large") == before + 1


def _responses_body(question: str) -> dict[str, Any]:
    return {"model": "test-model", "input": question, "truthlens_context": list(CONTEXT)}


def test_over_the_stream_cap_a_fail_closed_route_is_refused_not_answered_unchecked(closed: Stack) -> None:
    config = closed.config_yaml(decisions=DECISIONS)
    capped = config.replace("version: 1\n", "version: 1\ngateway:\n  max_streams: 1\n", 1)
    assert closed.write_config(capped) == "applied"
    try:
        held: list[RawResponse] = []
        thread = threading.Thread(target=lambda: held.append(
            _post(closed, CHAT, chat_body("slow-stream", context=CONTEXT, stream=True), "hold")))
        thread.start()
        launch.wait_until(lambda: any(c["rule"] == "slow" for c in closed.upstream_calls()), "the slow call", None, 10)
        calls = len(closed.upstream_calls())
        before = closed.metric("truthlens_errors_total", reason="worker_overloaded")
        for path, body in ((CHAT, chat_body("hallucinated?", context=CONTEXT)),
                           (RESPONSES, _responses_body("hallucinated?"))):
            resp = _post(closed, path, body, "closed")
            assert resp.status == 503, path
            assert resp.json()["error"]["code"] == "worker_overloaded"
            assert HALLUCINATED.encode() not in resp.body
        assert len(closed.upstream_calls()) == calls  # refused before the upstream was asked
        # A fail-open route over the cap still gets its answer, marked unchecked.
        open_resp = _post(closed, CHAT, chat_body("hallucinated?", context=CONTEXT))
        assert open_resp.status == 200 and open_resp.headers["x-truthlens-reason"] == "worker_overloaded"
        assert closed.metric("truthlens_errors_total", reason="worker_overloaded") == before + 3
        thread.join(30)
        assert held and held[0].headers["x-truthlens-detected"] == "true"
    finally:
        assert closed.write_config(config) in ("applied", "unchanged")


# --------------------------------------------------------------------------- the cascade

def _completion(message_content: Any) -> str:
    return json.dumps({"id": "judge", "object": "chat.completion", "created": 1, "model": SPAN_MODEL,
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": message_content},
                                    "finish_reason": "stop"}]})


DEEP = "[" * 100_000 + "]" * 100_000
HUGE_CLEAN = json.dumps({"id": "judge", "object": "chat.completion", "created": 1, "model": SPAN_MODEL,
                         "padding": "x" * (12 * MIB),
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"spans": []}'},
                                      "finish_reason": "stop"}]})
INVENTED = "built by Gustave Eiffel in 1925"  # the answer says "completed in 1925"


def _raw_judge(word: str, body: str) -> dict[str, Any]:
    return {"name": f"judge_{word}", "match": {"model": SPAN_MODEL, "any": word},
            "reply": {"raw_body": body, "content_type": "application/json"}}


JUDGE_RULES = [
    _raw_judge("number-judge", _completion(12345)),
    _raw_judge("nested-judge", _completion(DEEP)),
    _raw_judge("deep-body-judge", DEEP),
    _raw_judge("huge-judge", HUGE_CLEAN),
    {"name": "judge_elsewhere", "match": {"model": SPAN_MODEL, "any": "elsewhere-judge"},
     "reply": {"span_judge": {"quotes": [INVENTED]}}},
    {"name": "judge_partly", "match": {"model": SPAN_MODEL, "any": "partly-judge"},
     "reply": {"span_judge": {"quotes": ["Eiffel Tower", INVENTED]}}},
]

CASCADE: dict[str, Any] = {
    "version": 1,
    "detector": {"model": "builtin", "intra_op_threads": 1,
                 "confirm": {"backend": "llm", "model": SPAN_MODEL, "when": "flagged"}},
    "models": {
        "default": {"base_url": "http://placeholder/v1", "timeout_s": 30},
        SPAN_MODEL: {"base_url": "http://placeholder/v1", "timeout_s": 10, "max_retries": 0},
    },
    "hallucination": {"default_mode": "lightweight", "threshold": 0.5, "actions": ["header", "body"],
                      "budgets": {"detection_ms": 20000, "total_ms": 60000}},
    "decisions": [decision("confirmed_block", priority=10, actions=["header", "block"], confirm=True)],
}


@pytest.fixture(scope="module")
def cascade(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpanDetectorStack]:
    require_shipped_model()
    with running(tmp_path_factory.mktemp("round2-cascade"), CASCADE) as stack:
        stack.set_script([*JUDGE_RULES, *SPAN_SCRIPT])
        yield stack


@pytest.mark.parametrize(("word", "why"), [
    ("number-judge", "error"),  # the message content is a number, not text
    ("nested-judge", "bad_output"),  # the content is JSON nested past the parser's depth
    ("deep-body-judge", "error"),  # the whole completion is
    ("huge-judge", "error"),  # 12 MiB, over the reply bound: refused unread
    ("elsewhere-judge", "bad_output"),  # quotes only text the answer does not contain
])
def test_an_unreadable_confirmer_reply_leaves_the_encoders_block_standing(
    cascade: SpanDetectorStack, word: str, why: str
) -> None:
    before = cascade.metric("truthlens_confirmations_total", decision="confirmed_block", outcome=why)
    resp = ask(cascade, f"hallucinated {word}")
    assert resp.status != 200 and HALLUCINATED.encode() not in resp.body  # still blocked
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-truthlens-confirm"] == "unavailable"
    assert resp.headers["x-truthlens-confirm-reason"] == why
    assert wait_for_metric(cascade, "truthlens_confirmations_total", before + 1,
                           decision="confirmed_block", outcome=why) == before + 1
    assert ask(cascade, "grounded").status == 200  # the worker keeps serving


def test_fact_check_findings_a_partly_invented_reply_did_not_quote_stand(cascade: SpanDetectorStack) -> None:
    resp = ask(cascade, "hallucinated partly-judge")
    assert resp.status != 200 and HALLUCINATED.encode() not in resp.body
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-truthlens-confirm"] == "facts_stand"


# --------------------------------------------------------------------------- backend: llm

LLM_BACKEND: dict[str, Any] = {
    "version": 1,
    "detector": {"backend": "llm", "llm": {"model": SPAN_MODEL, "max_tokens": 512}},
    "models": {
        "default": {"base_url": "http://placeholder/v1", "timeout_s": 30},
        SPAN_MODEL: {"base_url": "http://placeholder/v1", "timeout_s": 10, "max_retries": 0},
    },
    "hallucination": {"default_mode": "lightweight", "threshold": 0.5, "actions": ["header", "body"],
                      "budgets": {"detection_ms": 20000, "total_ms": 60000}},
    "decisions": [decision("chat", priority=10, actions=["header", "body"])],
}


@pytest.fixture(scope="module")
def llm_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpanDetectorStack]:
    with running(tmp_path_factory.mktemp("round2-llm"), LLM_BACKEND) as stack:
        stack.set_script([*JUDGE_RULES, *SPAN_SCRIPT])
        yield stack


@pytest.mark.parametrize("word", ["elsewhere-judge", "huge-judge"])
def test_a_judge_that_names_nothing_of_the_answer_could_not_check_it(llm_backend: SpanDetectorStack,
                                                                     word: str) -> None:
    resp = ask(llm_backend, f"hallucinated {word}")
    assert resp.status == 200 and content(resp) == HALLUCINATED
    assert resp.headers["x-truthlens-detected"] == "unavailable"  # not "false": nothing was checked
    # Quoting only text the answer lacks is an unreadable reply; a reply over max_reply_bytes, an error.
    assert resp.headers["x-truthlens-reason"] == {"elsewhere-judge": "detector_unreadable",
                                                  "huge-judge": "detector_error"}[word]


# --------------------------------------------------------------------------- premium


def test_premium_claims_no_consensus_when_no_verifier_verdict_was_readable(closed: Stack) -> None:
    route = decision("premium_route", priority=10, mode="premium", actions=["header", "body"],
                     verification_models=["verifier-a", "verifier-b"], always_verify=True)
    text = closed.config_yaml(decisions=[route],
                              hallucination={"budgets": {"detection_ms": 5000, "total_ms": 60000}})
    assert closed.write_config(text) in ("applied", "unchanged")
    unreadable = [{"name": f"{m}-verdicts", "match": {"model": f"verifier-{m}", "user": VERDICT_MARKER},
                   "reply": {"content": "I would rather not say."}} for m in ("a", "b")]
    answers = [{"name": m, "match": {"model": f"verifier-{m}"}, "reply": {"content": GROUNDED}} for m in ("a", "b")]
    closed.set_script([*unreadable, *answers,
                       {"name": "primary", "match": {"model": "test-model"}, "reply": {"content": GROUNDED}}])
    resp = _post(closed, CHAT, chat_body("grounded?", context=CONTEXT))
    assert resp.status == 200 and resp.headers["x-truthlens-mode"] == "premium"
    assert resp.headers["x-truthlens-verifiers"] == "2/2"  # both answered; neither verdict was readable
    assert resp.headers["x-truthlens-consensus"] == "false"
