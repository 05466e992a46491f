"""Lightweight mode on the REAL shipped detector (ONNX Runtime, trained model): option
parsing, a grounded and a hallucinated choice in one exchange, the run through run_check with
its metrics, and degraded paths (detection budget, detector size limits). Nothing is scripted;
the shipped model is committed, so a checkout without it fails here."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from truthlens.detector.types import Detector, DetectorSettings
from truthlens.gateway.apis.chat.body import ContextSettings, parse_chat_request
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.policy.checking import run_check, verdict_reason
from truthlens.gateway.policy.config import Budgets, parse_config
from truthlens.modes import lightweight
from truthlens.modes.base import Exchange, GroundedQuery, Services
from truthlens.options import ConfigError, OptionContext

CONTEXT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It was designed by Gustave Eiffel's company and completed in 1889 for the World's Fair.",
)
QUESTION = "Where is the Eiffel Tower and when was it completed?"
GROUNDED = "The Eiffel Tower is in Paris, France, and it was completed in 1889."
# The module's detector is shared, so the tests using it share one event loop.
on_module_loop = pytest.mark.asyncio(loop_scope="module")

HALLUCINATED = "The Eiffel Tower is in Berlin, Germany, and it was completed in 1925 by Albert Speer."


async def load_detector(**overrides: Any) -> Detector:
    from truthlens.detector.backends import factory
    return factory.create_detector(dataclasses.replace(DetectorSettings(), **overrides))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def detector() -> AsyncIterator[Detector]:
    d = await load_detector()
    yield d
    await d.close()


def exchange(answers: tuple[str, ...], *, deadline_in: float = 60.0) -> Exchange:
    import time

    return Exchange(
        decision="rag",
        mode="lightweight",
        threshold=0.5,
        options=lightweight.LightweightOptions(),
        query=GroundedQuery(model="m", question=QUESTION, passages=CONTEXT, messages=()),
        answers=answers,
        deadline=time.monotonic() + deadline_in,
    )


def test_options() -> None:
    ctx = OptionContext(path="decisions[0].plugins[0].configuration", models=frozenset())
    assert lightweight.parse_options({}, ctx) == lightweight.LightweightOptions()
    with pytest.raises(ConfigError) as info:
        lightweight.parse_options({"max_iterations": 2}, ctx)
    assert info.value.key == "decisions[0].plugins[0].configuration.max_iterations"
    assert lightweight.build().name == lightweight.NAME == "lightweight"


@on_module_loop
async def test_each_choice_is_checked_and_nothing_is_rewritten(detector: Detector) -> None:
    verdict = await lightweight.build().run(exchange((GROUNDED, HALLUCINATED)), Services(detector=detector))
    grounded, hallucinated = verdict.choices
    assert (grounded.index, hallucinated.index) == (0, 1)
    assert grounded.detection.score is not None and hallucinated.detection.score is not None
    assert hallucinated.detection.status == "detected"
    assert hallucinated.detection.score > grounded.detection.score
    assert any("Berlin" in s.text or "1925" in s.text for s in hallucinated.detection.spans)
    assert not verdict.rewritten and verdict.iterations == 0
    assert verdict.status == "detected"


@on_module_loop
async def test_through_run_policy_with_metrics(detector: Detector) -> None:
    cfg = parse_config(
        {"version": 1, "decisions": [{"name": "rag", "plugins": [{"type": "hallucination", "configuration": {}}]}]}
    )
    decision = cfg.decisions[0]
    assert decision.route is not None
    body = {"model": "m", "truthlens_context": list(CONTEXT), "messages": [{"role": "user", "content": QUESTION}]}
    req = parse_chat_request(json.dumps(body).encode(), ContextSettings())
    t = Telemetry(registry=CollectorRegistry(), tracer_provider=TracerProvider())
    verdict = await run_check(decision.route, decision, req, [HALLUCINATED], Services(detector=detector), t)
    assert verdict.status == "detected"
    get = t.registry.get_sample_value
    assert get("truthlens_detections_total", {"decision": "rag", "mode": "lightweight", "detected": "true"}) == 1
    assert get("truthlens_latency_seconds_count", {"mode": "lightweight", "operation": "detect"}) == 1
    assert get("truthlens_score_count", {"decision": "rag", "mode": "lightweight"}) == 1

    # A detection budget too small for the model: unavailable with a reason, never clean.
    starved = dataclasses.replace(decision.route, budgets=Budgets(detection_s=1e-6, total_s=5.0))
    verdict = await run_check(starved, decision, req, [GROUNDED], Services(detector=detector), t)
    assert verdict.status == "unavailable"
    assert verdict_reason(verdict) in {"detector_timeout", "budget_exhausted"}


@on_module_loop
async def test_input_over_the_detector_limits_is_unavailable() -> None:
    small = await load_detector(max_answer_chars=20)
    try:
        verdict = await lightweight.build().run(exchange((GROUNDED,)), Services(detector=small))
    finally:
        await small.close()
    (choice,) = verdict.choices
    assert choice.detection.status == "unavailable" and choice.detection.reason == "invalid_input"


@on_module_loop
async def test_no_time_left_is_unavailable(detector: Detector) -> None:
    verdict = await lightweight.build().run(exchange((GROUNDED,), deadline_in=-1.0), Services(detector=detector))
    assert verdict.choices[0].detection.reason == "budget_exhausted"
