"""The Apollo 11 case end to end: the wrong astronaut in lunar orbit is flagged, then fixed by
the example configs as shipped.

Real: Envoy, gRPC ext_proc, the processor, ONNX Runtime running the shipped detector with its
fact check. Scripted: the upstream LLM (primary answer, refine answer, verifiers, judge).

The context is the whole paragraph, so every name of the wrong answer is in it: only the roles
are wrong (Aldrin in orbit, Collins landing). The detector must see that, by its model or by
its role check, and flag "Buzz Aldrin"; the corrected answer restates the paragraph in other
words (Collins in orbit, Armstrong and Aldrin landing) and must come back clean. Premium's
verifiers give the corrected answer (see ``tests/shipped_inputs.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import Stack, chat_body, decision
from shipped_inputs import APOLLO_CONTEXT, APOLLO_FIXED, APOLLO_QUESTION, APOLLO_WRONG, APOLLO_WRONG_PERSON

from truthlens.modes.prompts import REFINE_MARKER
from truthlens.modes.quoting import read_data

pytestmark = pytest.mark.envoy

EXAMPLES = Path(__file__).parents[2] / "configs" / "examples"
SPANS = {"x-truthlens-include-spans": "true"}


def use_example(stack: Stack, mode: str) -> None:
    """The example file as shipped, only re-pointed at this stack's ports and detector model."""
    doc = yaml.safe_load((EXAMPLES / f"{mode}.yaml").read_text("utf-8"))
    doc["detector"]["model"] = str(stack.model_dir) if stack.model_dir is not None else "builtin"
    doc["detector"]["intra_op_threads"] = 1
    for endpoint in doc["models"].values():
        endpoint["base_url"] = f"http://127.0.0.1:{stack.ports.upstream}/v1"
    assert stack.write_config(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)) in ("applied", "unchanged")


def ask(stack: Stack, *, headers: dict[str, str] | None = None) -> Any:
    body = chat_body(APOLLO_QUESTION, context=[APOLLO_CONTEXT], model="primary")
    return stack.raw("POST", "/v1/chat/completions", body, headers)


def test_the_wrong_astronaut_is_detected_with_a_span_on_him(stack: Stack) -> None:
    route = decision("apollo_detect", priority=10, enabled=True, mode="lightweight", actions=["header"])
    assert stack.write_config(stack.config_yaml(decisions=[route])) in ("applied", "unchanged")
    stack.set_script([{"name": "primary", "match": {"model": "primary"}, "reply": {"content": APOLLO_WRONG}}])
    resp = ask(stack, headers=SPANS)
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "true"
    body = resp.json()
    assert body["choices"][0]["message"]["content"] == APOLLO_WRONG  # header action: body untouched
    spans = body["truthlens"]["choices"][0]["spans"]
    start = APOLLO_WRONG.index(APOLLO_WRONG_PERSON)
    on_him = [s for s in spans if s["start"] <= start and start + len(APOLLO_WRONG_PERSON) <= s["end"]]
    assert on_him, spans
    assert on_him[0]["reason"] == "misattributed_entity" and on_him[0]["prob"] >= 0.5
    assert APOLLO_WRONG[on_him[0]["start"] : on_him[0]["end"]] == on_him[0]["text"]


def test_standard_example_refines_it_into_the_grounded_answer(stack: Stack) -> None:
    use_example(stack, "standard")
    stack.set_script([{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": APOLLO_FIXED}},
                      {"name": "primary", "match": {"model": "primary"}, "reply": {"content": APOLLO_WRONG}}])
    resp = ask(stack, headers=SPANS)
    assert resp.status == 200
    body = resp.json()
    assert body["choices"][0]["message"]["content"] == APOLLO_FIXED
    assert resp.headers["x-truthlens-mode"] == "standard"
    assert resp.headers["x-truthlens-detected"] == "false"  # the refined answer, re-detected clean
    assert resp.headers["x-truthlens-iterations"] == "1"
    assert body["truthlens"]["choices"][0]["spans"] == []
    calls = stack.upstream_calls()
    assert [c["rule"] for c in calls] == ["primary", "refine"]
    # The refine prompt names the flagged span and what is wrong with it.
    data = read_data(str(calls[1]["messages"][-1]["content"]))
    assert data is not None
    named = [s for s in data["flagged_spans"] if APOLLO_WRONG_PERSON in s["text"]]
    assert named
    assert named[0]["why"] == "the context says this of another name"  # the role check's finding


def test_premium_example_replaces_the_wrong_claim_with_the_verifiers(stack: Stack) -> None:
    use_example(stack, "premium")
    # Both verifiers give the grounded claim; the judge is down, so what reaches the client is
    # the primary answer with its disputed claim replaced by the most reliable verifier's.
    stack.set_script([{"name": "a", "match": {"model": "verifier-a"}, "reply": {"content": APOLLO_FIXED}},
                      {"name": "b", "match": {"model": "verifier-b"}, "reply": {"content": APOLLO_FIXED}},
                      {"name": "judge", "match": {"model": "judge"}, "reply": {"status": 503}},
                      {"name": "primary", "match": {"model": "primary"}, "reply": {"content": APOLLO_WRONG}}])
    resp = ask(stack)
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == APOLLO_FIXED
    assert resp.headers["x-truthlens-mode"] == "premium"
    assert resp.headers["x-truthlens-detected"] == "false"
    assert resp.headers["x-truthlens-verifiers"] == "2/2"
    assert {c["rule"] for c in stack.upstream_calls()} == {"primary", "a", "b", "judge"}
