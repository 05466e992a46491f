"""run_check containment: whatever fails (unknown mode, a broken collaborator, an exhausted
budget, missing gating parts) the verdict is "unavailable" with a reason and the failure is
counted, never "clean" and never an exception. Evidence gating runs the real embedder.
Real modes, real failures and the shipped trained detector in ONNX Runtime: nothing is
scripted (no upstream LLM is involved)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from shipped_inputs import (
    CONTEXT,
    GROUNDED,
    HALLUCINATED,
    QUESTION,
    WRONG_FACTS,
    require_shipped_model,
)

from truthlens.detector.types import Detection, DetectionInput
from truthlens.gateway.apis.chat.body import ChatRequest, ContextSettings, parse_chat_request
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.policy.checking import (
    BudgetedDetector,
    record_escalations,
    run_check,
    verdict_reason,
)
from truthlens.gateway.policy.config import Budgets, Config, Decision, parse_config
from truthlens.modes.base import ChoiceVerdict, Services, Verdict

PASSAGES = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889.",
    "Bananas are botanically berries and grow in tropical climates.",
    "Photosynthesis converts light energy into chemical energy in plants.",
]


def config(configuration: dict[str, Any]) -> Config:
    return parse_config(
        {
            "version": 1,
            "decisions": [
                {"name": "rag", "priority": 1, "plugins": [{"type": "hallucination", "configuration": configuration}]}
            ],
        }
    )


def request(passages: Sequence[str] = PASSAGES, question: str = "Where is the Eiffel Tower?") -> ChatRequest:
    body = {
        "model": "m",
        "truthlens_context": list(passages),
        "messages": [{"role": "user", "content": question}],
    }
    return parse_chat_request(json.dumps(body).encode(), ContextSettings())


def telemetry() -> tuple[Telemetry, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry(registry=CollectorRegistry(), tracer_provider=provider), exporter


def counted(t: Telemetry, metric: str, labels: dict[str, str]) -> float:
    return t.registry.get_sample_value(metric, labels) or 0.0


def decision_of(cfg: Config) -> tuple[Decision, Any]:
    decision = cfg.decisions[0]
    assert decision.route is not None
    return decision, decision.route


async def test_unknown_mode_is_unavailable_not_an_exception() -> None:
    decision, policy = decision_of(config({}))
    policy = dataclasses.replace(policy, mode="no_such_mode")
    t, spans = telemetry()
    verdict = await run_check(policy, decision, request(), ["An answer."], Services(detector=None), t)  # type: ignore[arg-type]
    assert verdict.status == "unavailable" and verdict.score is None
    assert verdict_reason(verdict) == "mode_unavailable"
    assert counted(t, "truthlens_errors_total", {"reason": "mode_unavailable"}) == 1
    assert counted(t, "truthlens_detections_total", {"decision": "rag", "mode": "no_such_mode", "detected": "unavailable"}) == 1
    (span,) = spans.get_finished_spans()
    assert span.name == "truthlens.policy" and span.attributes["truthlens.reason"] == "mode_unavailable"
    assert span.attributes["truthlens.verdict.reason"] == "mode_unavailable"


async def test_a_failing_collaborator_is_contained_as_mode_error() -> None:
    # No detector at all: the lightweight mode's call fails with a plain AttributeError,
    # the kind of bug that must never reach the stream.
    decision, policy = decision_of(config({}))
    t, _ = telemetry()
    verdict = await run_check(policy, decision, request(), ["One.", "Two."], Services(detector=None), t)  # type: ignore[arg-type]
    assert [c.detection.status for c in verdict.choices] == ["unavailable", "unavailable"]
    assert [c.index for c in verdict.choices] == [0, 1]
    assert verdict_reason(verdict) == "mode_error"
    assert counted(t, "truthlens_latency_seconds_count", {"mode": "lightweight", "operation": "policy"}) == 1


async def test_no_choices_is_unavailable() -> None:
    decision, policy = decision_of(config({}))
    t, _ = telemetry()
    verdict = await run_check(policy, decision, request(), [], Services(detector=None), t)  # type: ignore[arg-type]
    assert verdict.status == "unavailable" and verdict_reason(verdict) == "no_choices"


async def test_an_exhausted_budget_never_reaches_the_detector() -> None:
    decision, policy = decision_of(config({}))
    policy = dataclasses.replace(policy, budgets=Budgets(detection_s=0.0, total_s=0.0))
    t, _ = telemetry()
    verdict = await run_check(policy, decision, request(), ["An answer."], Services(detector=None), t)  # type: ignore[arg-type]
    assert verdict_reason(verdict) == "budget_exhausted"
    assert counted(t, "truthlens_errors_total", {"reason": "budget_exhausted"}) == 1


async def test_budgeted_detector_without_budget_answers_unavailable() -> None:
    t, _ = telemetry()
    view = BudgetedDetector(None, 0.5, 0.0, t, "lightweight")  # type: ignore[arg-type]  # deadline long past
    item = DetectionInput(context=PASSAGES, question="q", answer="a")
    assert (await view.detect(item, threshold=0.5)).reason == "budget_exhausted"
    assert [d.reason for d in await view.detect_many([item, item], threshold=0.5)] == ["budget_exhausted"] * 2
    await view.close()  # closes nothing: the shared detector outlives an exchange


async def test_gating_without_an_embedder_still_runs_the_check() -> None:
    decision, policy = decision_of(config({"evidence": {"enabled": True}}))
    t, _ = telemetry()
    verdict = await run_check(policy, decision, request(), ["An answer."], Services(detector=None), t)  # type: ignore[arg-type]
    assert counted(t, "truthlens_errors_total", {"reason": "evidence_error"}) == 1
    # The check itself went on (and failed here for want of a detector, not for gating).
    assert verdict_reason(verdict) == "mode_error"


async def test_gating_with_the_real_embedder_keeps_the_relevant_passage() -> None:
    from truthlens.evidence import embedder as embedder_module
    embedder = embedder_module.OnnxEmbedder.load()
    decision, policy = decision_of(config({"evidence": {"enabled": True, "min_gate": 0.5}}))
    t, spans = telemetry()
    try:
        await run_check(policy, decision, request(), ["An answer."], Services(detector=None, embedder=embedder), t)  # type: ignore[arg-type]
    finally:
        embedder.close()
    gate_span = next(s for s in spans.get_finished_spans() if s.name == "truthlens.evidence_gate")
    assert gate_span.attributes["truthlens.passages"] == 3
    assert 1 <= gate_span.attributes["truthlens.kept"] < 3
    assert counted(t, "truthlens_latency_seconds_count", {"mode": "lightweight", "operation": "evidence_gate"}) == 1
    assert counted(t, "truthlens_errors_total", {"reason": "evidence_error"}) == 0


async def test_gating_hands_the_held_back_passages_on() -> None:
    """What gating sets aside is what ACR may bring back as more evidence (Exchange.held_back_passages)."""
    from truthlens.evidence import embedder as embedder_module
    from truthlens.evidence.gating import EvidenceSettings
    from truthlens.gateway.policy.checking import _gate
    embedder = embedder_module.OnnxEmbedder.load()
    t, _ = telemetry()
    try:
        query, held_back = await _gate(
            request().grounded_query(), EvidenceSettings(enabled=True, min_gate=0.5),
            Services(detector=None, embedder=embedder), t, "lightweight",  # type: ignore[arg-type]
        )
    finally:
        embedder.close()
    assert PASSAGES[0] in query.passages
    assert held_back and set(held_back) | set(query.passages) == set(PASSAGES)
    assert not set(held_back) & set(query.passages)


async def test_verdicts_on_the_shipped_onnx_detector() -> None:
    """The shipped trained model, fed answers it judges with a wide margin (tests/shipped_inputs.py)."""
    from truthlens.detector.backends.factory import create_detector
    from truthlens.detector.types import DetectorSettings

    require_shipped_model()
    detector = create_detector(DetectorSettings())
    decision, policy = decision_of(config({}))
    t, _ = telemetry()
    try:
        answers = [GROUNDED, HALLUCINATED]
        asked = request([CONTEXT], QUESTION)
        verdict = await run_check(policy, decision, asked, answers, Services(detector=detector), t)
        clean, flagged = verdict.choices
        assert (clean.detection.status, flagged.detection.status) == ("clean", "detected")
        assert flagged.detection.spans
        assert all(any(s.text.strip() in fact for fact in WRONG_FACTS) for s in flagged.detection.spans)
        assert verdict.status == "detected" and verdict_reason(verdict) is None
        assert counted(t, "truthlens_detections_total", {"decision": "rag", "mode": "lightweight", "detected": "true"}) == 1
        assert counted(t, "truthlens_latency_seconds_count", {"mode": "lightweight", "operation": "detect"}) == 1

        # A detection budget no model can meet: unavailable with a reason, never "clean".
        starved = dataclasses.replace(policy, budgets=Budgets(detection_s=1e-9, total_s=5.0))
        verdict = await run_check(starved, decision, asked, answers[:1], Services(detector=detector), t)
        assert verdict.status == "unavailable"
        assert verdict_reason(verdict) in {"detector_timeout", "budget_exhausted"}
        assert counted(t, "truthlens_errors_total", {"reason": verdict_reason(verdict)}) == 1
    finally:
        await detector.close()


def test_escalation_path_is_counted_step_by_step() -> None:
    t, _ = telemetry()
    clean = Detection(status="clean", score=0.1)
    verdict = Verdict(
        mode="auto",
        choices=(ChoiceVerdict(0, clean),),
        attributes={"escalated_to": "premium", "escalation_path": ["lightweight", "standard", "premium"]},
    )
    record_escalations(verdict, t)
    record_escalations(dataclasses.replace(verdict, attributes={"escalation_path": ["lightweight"]}), t)
    get = t.registry.get_sample_value
    assert get("truthlens_escalations_total", {"from_mode": "lightweight", "to_mode": "standard"}) == 1
    assert get("truthlens_escalations_total", {"from_mode": "standard", "to_mode": "premium"}) == 1
    assert get("truthlens_escalations_total", {"from_mode": "lightweight", "to_mode": "premium"}) is None


class _BrokenLLM:
    """A model client with a bug: every call raises a plain error (no LLMError a mode handles)."""

    calls = 0

    async def chat(self, call: Any, deadline: float | None = None) -> Any:
        self.calls += 1
        raise RuntimeError("a collaborator's bug")

    def report_unreadable(self, model: str, role: str, why: str) -> None:
        pass


async def test_a_mode_failing_after_detection_keeps_the_detectors_verdict_and_its_warning() -> None:
    """Standard mode detects the upstream answer first, then re-asks a model: the re-ask breaks.
    The detector had flagged the answer: that verdict goes out (warned), the failure named."""
    from truthlens.detector.backends.factory import create_detector
    from truthlens.detector.types import DetectorSettings

    require_shipped_model()
    detector = create_detector(DetectorSettings())
    decision, policy = decision_of(config({"mode": "standard"}))
    t, spans = telemetry()
    llm = _BrokenLLM()
    try:
        verdict = await run_check(policy, decision, request([CONTEXT], QUESTION), [HALLUCINATED],
                                  Services(detector=detector, llm=llm), t)  # type: ignore[arg-type]
        # Nothing checked before the failure: unavailable as before (the detector never ran).
        none_checked = await run_check(policy, decision, request([CONTEXT], QUESTION), [HALLUCINATED],
                                       Services(detector=None, llm=llm), t)  # type: ignore[arg-type]
    finally:
        await detector.close()
    assert llm.calls >= 1  # the failure came after the detection
    (choice,) = verdict.choices
    assert choice.detection.status == "detected" and choice.detection.spans and choice.text is None
    assert verdict.status == "detected" and verdict_reason(verdict) is None
    assert verdict.attributes["mode_failed"] == "mode_error"
    assert counted(t, "truthlens_errors_total", {"reason": "mode_error"}) >= 1
    policy_span = next(s for s in spans.get_finished_spans() if s.name == "truthlens.policy")
    assert (policy_span.attributes or {})["truthlens.verdict.mode_failed"] == "mode_error"
    assert none_checked.status == "unavailable" and verdict_reason(none_checked) == "mode_error"
