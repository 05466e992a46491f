"""``mode: auto`` end to end: the monitor and the real standard / ACR / premium modes.

Scripted: only the upstream LLM (truthlens.testing.upstream). Real: the shipped detector and
embedder (ONNX Runtime), the LLM client over HTTP, and every mode that runs.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from truthlens.detector.types import Detector
from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.gateway.policy.thresholds import DEFAULT_THRESHOLD
from truthlens.llm import LLMClient
from truthlens.modes.base import (
    Exchange,
    GroundedQuery,
    Services,
    Verdict,
)
from truthlens.modes.escalation.auto import AutoOptions, build, parse_options
from truthlens.options import OptionContext
from truthlens.testing.upstream import ScriptedUpstream

# The shared detector and the scripted upstream live on the session's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="session")

CTX = OptionContext(path="decisions[0].plugins[0].configuration",
                    models=frozenset({"default", "expert", "verifier"}))
MUSEUM = ("The city museum opens at 9 am on weekdays and closes at 5 pm. Entry costs 12 euros for adults. "
          "The museum was founded by Anna Berg in 1911.")
FAITHFUL = "The city museum opens at 9 am on weekdays."
EMBELLISHED = "The city museum opens at 9 am on weekdays and offers free guided tours for children."
FOUNDED_1950 = "The museum was founded in 1950."


def _exchange(passage: str, question: str, answer: str, options: AutoOptions,
              budget_s: float = 60.0) -> Exchange:
    messages = ({"role": "system", "content": passage}, {"role": "user", "content": question})
    query = GroundedQuery(model="chat-model", question=question, passages=(passage,), messages=messages)
    return Exchange(decision="auto-route", mode="auto", threshold=DEFAULT_THRESHOLD, options=options, query=query,
                    answers=(answer,), deadline=time.monotonic() + budget_s)


async def _run(exchange: Exchange, detector: Detector, llm: LLMClient, embedder: OnnxEmbedder) -> Verdict:
    return await build().run(exchange, Services(detector=detector, llm=llm, embedder=embedder))


def _acr_rules(internal: str, external: str, triple: str, fused: str) -> list[dict[str, Any]]:
    def tag(t: str, **reply: Any) -> dict[str, Any]:
        return {"name": t, "match": {"system_regex": rf"^\[acr:{t}"}, "reply": reply}

    return [
        tag("internal-", content=f"Answer: {internal}", confidence=0.9),
        tag("extract-triples", content=triple),
        tag("verify-triples", content="1: yes"),
        tag("external-answer", content=f"Answer: {external}", confidence=0.6),
        tag("perturb", content="negation: x\nentity_swap: y\ntime_shift: z"),
        tag("counterfactual-answer", content=f"Answer: {internal}"),
        tag("fuse", content=fused),
    ]


async def test_clean_answer_stops_at_lightweight(upstream: ScriptedUpstream, llm: LLMClient,
                                                 embedder: OnnxEmbedder, detector: Detector) -> None:
    verdict = await _run(_exchange(MUSEUM, "When does the museum open?", FAITHFUL, parse_options({}, CTX)),
                         detector, llm, embedder)
    assert verdict.status == "clean", verdict.choices[0].detection
    assert verdict.attributes["escalated_to"] == "lightweight"
    assert verdict.attributes["escalation_path"] == ["lightweight"]
    assert upstream.calls == [] and not verdict.rewritten and verdict.mode == "auto"


async def test_contradicting_span_escalates_to_acr(upstream: ScriptedUpstream, llm: LLMClient,
                                                   embedder: OnnxEmbedder, detector: Detector) -> None:
    # The passage says 1911, the answer 1950 (the model's memory): a context-memory conflict.
    upstream.set_rules(_acr_rules("1950", "1911", "<s>museum | founded in | 1911</s>", FOUNDED_1950))
    verdict = await _run(_exchange(MUSEUM, "When was the museum founded?", FOUNDED_1950,
                                   parse_options({}, CTX)), detector, llm, embedder)
    detection = verdict.choices[0].detection
    if "1950" not in [s.text.strip() for s in detection.spans]:
        pytest.fail(f"the shipped detector no longer flags the contradicting year: {detection}")
    assert verdict.attributes["monitor"]["findings"] == ["conflict"], verdict.attributes
    assert verdict.attributes["escalation_path"] == ["lightweight", "acr"]
    assert verdict.attributes["escalated_to"] == "acr"
    assert verdict.headers["x-truthlens-acr-source"] == "internal"
    assert verdict.attributes["stages"]["acr"]["acr"]["outcome"] == "resolved"


async def test_unsupported_span_escalates_to_standard(upstream: ScriptedUpstream, llm: LLMClient,
                                                      embedder: OnnxEmbedder, detector: Detector) -> None:
    upstream.set_rules([{"name": "refine", "reply": {"content": FAITHFUL}}])
    verdict = await _run(_exchange(MUSEUM, "When does the museum open?", EMBELLISHED, parse_options({}, CTX)),
                         detector, llm, embedder)
    assert verdict.attributes["monitor"]["findings"] == ["flagged"], verdict.attributes
    assert verdict.attributes["escalation_path"] == ["lightweight", "standard"]
    assert verdict.choices[0].text == FAITHFUL
    assert verdict.status == "clean"
    assert [c.params.get("n", 1) for c in upstream.calls] and all(c.rule == "refine" for c in upstream.calls)


async def test_expert_disagreement_escalates_to_acr(upstream: ScriptedUpstream, llm: LLMClient,
                                                    embedder: OnnxEmbedder, detector: Detector) -> None:
    upstream.set_rules([
        {"name": "expert", "match": {"model": "expert"},
         "reply": {"content": "Penguins cannot fly, but they are excellent swimmers."}},
        *_acr_rules("9 am", "9 am", "<s>museum | opens at | 9 am</s>", "unused"),
    ])
    options = parse_options({"expert_model": "expert"}, CTX)
    verdict = await _run(_exchange(MUSEUM, "When does the museum open?", FAITHFUL, options),
                         detector, llm, embedder)
    monitor = verdict.attributes["monitor"]
    assert monitor["findings"] == ["conflict"] and monitor["expert_similarity"][0] < 0.4
    assert verdict.attributes["escalated_to"] == "acr"
    assert verdict.headers["x-truthlens-acr-source"] == "agreement"
    assert not verdict.rewritten


async def test_expert_agreement_keeps_a_clean_answer(upstream: ScriptedUpstream, llm: LLMClient,
                                                     embedder: OnnxEmbedder, detector: Detector) -> None:
    upstream.set_rules([{"name": "expert", "match": {"model": "expert"},
                         "reply": {"content": "It opens at 9 am on weekdays."}}])
    options = parse_options({"expert_model": "expert"}, CTX)
    verdict = await _run(_exchange(MUSEUM, "When does the museum open?", FAITHFUL, options),
                         detector, llm, embedder)
    assert verdict.attributes["monitor"]["expert_similarity"][0] >= 0.4
    assert verdict.attributes["escalated_to"] == "lightweight"
    assert [c.rule for c in upstream.calls] == ["expert"]


async def test_still_flagged_after_standard_goes_premium(upstream: ScriptedUpstream, llm: LLMClient,
                                                         embedder: OnnxEmbedder, detector: Detector) -> None:
    upstream.set_rules([
        {"name": "verifier", "match": {"model": "verifier"}, "reply": {"content": FAITHFUL}},
        {"name": "refine", "reply": {"content": EMBELLISHED}},  # refinement does not help
    ])
    options = parse_options({"standard": {"max_iterations": 1},
                             "premium": {"verification_models": ["verifier"]}}, CTX)
    verdict = await _run(_exchange(MUSEUM, "When does the museum open?", EMBELLISHED, options),
                         detector, llm, embedder)
    assert verdict.attributes["escalation_path"] == ["lightweight", "standard", "premium"]
    assert verdict.attributes["escalated_to"] == "premium"
    assert any(c.rule == "verifier" for c in upstream.calls)
    assert verdict.choices[0].detection.score is not None


async def test_unavailable_detection_is_not_escalated_and_not_clean(
        upstream: ScriptedUpstream, llm: LLMClient, embedder: OnnxEmbedder, detector: Detector) -> None:
    verdict = await _run(_exchange(MUSEUM, "When does the museum open?", EMBELLISHED,
                                   parse_options({}, CTX), budget_s=0.0), detector, llm, embedder)
    assert verdict.status == "unavailable"
    assert verdict.attributes["escalated_to"] == "lightweight"
    assert upstream.calls == []

