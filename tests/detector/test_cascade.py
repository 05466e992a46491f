"""The encoder→LLM cascade (:mod:`truthlens.detector.backends.cascade`): the shipped encoder flags, a
generative confirmer keeps or clears its spans, and which stage decided is on the detection.

Scripted part: the confirmer's model server (``truthlens.testing.upstream`` with its span judge,
``truthlens.testing.span_judge``: a deterministic rule, not a model), reached over real HTTP by
the real ``llm`` backend. Real: the shipped encoder in ONNX Runtime, the LLM client, OpenTelemetry SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest
import pytest_asyncio
from shipped_inputs import CONTEXT, GROUNDED, HALLUCINATED, QUESTION, WRONG_FACTS, require_shipped_model
from span_capture import captured_spans

from truthlens.detector.backends.cascade import CascadeDetector, summarize
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import Detection, DetectionInput, Detector, DetectorHooks, DetectorSettings, LlmSettings
from truthlens.llm import Endpoint
from truthlens.testing.upstream import ScriptedUpstream

on_module_loop = pytest.mark.asyncio(loop_scope="module")

BAD = DetectionInput([CONTEXT], QUESTION, HALLUCINATED)
GOOD = DetectionInput([CONTEXT], QUESTION, GROUNDED)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def encoder() -> AsyncIterator[Detector]:
    require_shipped_model()
    detector = create_detector(DetectorSettings(provider="cpu", intra_op_threads=1))
    yield detector
    await detector.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as up:
        yield up


class Outcomes(list[tuple[str, float]]):
    def __call__(self, outcome: str, seconds: float) -> None:
        self.append((outcome, seconds))


async def confirm(encoder: Detector, up: ScriptedUpstream, items: Sequence[DetectionInput],
                  rules: Sequence[Mapping[str, Any]] = (), *, timeout_s: float | None = 30.0,
                  endpoint_timeout_s: float = 10.0, **kw: Any) -> tuple[list[Detection], Outcomes]:
    """``items`` through a cascade whose confirmer calls ``up`` (with ``rules``)."""
    up.set_rules(rules)
    endpoint = Endpoint(base_url=up.base_url, timeout_s=endpoint_timeout_s, max_retries=0)
    confirmer = create_detector(DetectorSettings(backend="llm", llm=LlmSettings("judge", endpoint, role="confirm")),
                                DetectorHooks())
    outcomes = Outcomes()
    try:
        cascade = CascadeDetector(encoder, confirmer, on_outcome=outcomes, **kw)
        found = await cascade.detect_many(list(items), threshold=0.5, timeout_s=timeout_s)
    finally:
        await confirmer.close()
    return found, outcomes


def judged(**script: Any) -> list[dict[str, Any]]:
    return [{"match": {"model": "judge"}, "reply": {"span_judge": script or True}}]


@on_module_loop
async def test_confirmed_spans_are_kept_and_say_so(encoder: Detector, upstream: ScriptedUpstream) -> None:
    alone = await encoder.detect(BAD, threshold=0.5)
    assert alone.status == "detected" and alone.spans  # the encoder flags the wrong facts
    (found,), outcomes = await confirm(encoder, upstream, [BAD])
    assert found.status == "detected" and found.reason == "confirmed_llm"
    assert found.score == alone.score  # the encoder's score stands
    assert found.spans and all(s.reason == "confirmed_llm" for s in found.spans)
    assert {(s.start, s.end) for s in found.spans} <= {(s.start, s.end) for s in alone.spans}
    assert all(any(fact in s.text for fact in WRONG_FACTS) for s in found.spans)
    assert [o for o, _ in outcomes] == ["confirmed"]
    assert [c.params["response_format"]["type"] for c in upstream.calls] == ["json_schema"]


@on_module_loop
async def test_cleared_spans_make_the_answer_clean(encoder: Detector, upstream: ScriptedUpstream) -> None:
    (found,), outcomes = await confirm(encoder, upstream, [BAD], judged(quotes=[]))
    assert found.status == "clean" and found.score == 0.0 and found.spans == ()
    assert found.reason == "cleared_llm"
    assert [o for o, _ in outcomes] == ["cleared"]


@on_module_loop
async def test_only_the_spans_the_confirmer_quoted_survive(encoder: Detector, upstream: ScriptedUpstream) -> None:
    alone = await encoder.detect(BAD, threshold=0.5)
    year = HALLUCINATED.index("1925")
    (found,), _ = await confirm(encoder, upstream, [BAD], judged(quotes=["1925"]))
    expected = [s for s in alone.spans if s.start <= year < s.end]
    assert expected and len(expected) < len(alone.spans), alone.spans  # the year, and more besides
    assert [(s.start, s.end) for s in found.spans] == [(s.start, s.end) for s in expected]
    assert found.status == "detected" and found.reason == "confirmed_llm"


@on_module_loop
async def test_clean_answers_are_never_sent_to_the_confirmer(encoder: Detector, upstream: ScriptedUpstream) -> None:
    (good, bad), outcomes = await confirm(encoder, upstream, [GOOD, BAD])
    assert good.status == "clean" and good.reason is None
    assert bad.reason == "confirmed_llm"
    assert len(upstream.calls) == 1 and len(outcomes) == 1  # the flagged answer only
    assert GROUNDED not in upstream.calls[0].messages[1]["content"]


@on_module_loop
@pytest.mark.parametrize(
    ("rules", "why"),
    [
        ([{"match": {"model": "judge"}, "reply": {"delay_s": 5, "span_judge": True}}], "timeout"),
        (judged(malformed=True), "bad_output"),
        ([{"match": {"model": "judge"}, "reply": {"status": 503}}], "error"),
    ],
)
async def test_an_unavailable_confirmer_leaves_the_encoders_verdict_standing(
    encoder: Detector, upstream: ScriptedUpstream, rules: list[dict[str, Any]], why: str
) -> None:
    alone = await encoder.detect(BAD, threshold=0.5)
    (found,), outcomes = await confirm(encoder, upstream, [BAD], rules, endpoint_timeout_s=0.5)
    assert found.status == "detected"  # never silently clean
    assert (found.score, found.spans) == (alone.score, alone.spans)
    assert found.reason == f"confirm_{why}"
    assert [o for o, _ in outcomes] == [why]


@on_module_loop
async def test_without_a_loaded_confirmer_the_verdict_stands_and_says_so(encoder: Detector) -> None:
    outcomes = Outcomes()
    (found,) = await CascadeDetector(encoder, None, on_outcome=outcomes).detect_many([BAD], threshold=0.5)
    assert found.status == "detected" and found.spans and found.reason == "confirm_not_loaded"
    assert [o for o, _ in outcomes] == ["not_loaded"]


@on_module_loop
async def test_the_confirmation_is_one_traced_step(encoder: Detector, upstream: ScriptedUpstream) -> None:
    with captured_spans() as spans:
        upstream.set_rules([])
        endpoint = Endpoint(base_url=upstream.base_url, max_retries=0)
        confirmer = create_detector(
            DetectorSettings(backend="llm", llm=LlmSettings("judge", endpoint, role="confirm")),
            DetectorHooks(tracer=spans.tracer))
        try:
            cascade = CascadeDetector(encoder, confirmer, tracer=spans.tracer)
            await cascade.detect(BAD, threshold=0.5, timeout_s=30)
        finally:
            await confirmer.close()
        finished = {s.name: s for s in spans.get_finished_spans()}
    step, call = finished["truthlens.confirm"], finished["chat judge"]
    assert call.parent is not None and call.parent.span_id == step.context.span_id
    assert step.attributes is not None and call.attributes is not None
    assert step.attributes["truthlens.flagged"] == 1 and list(step.attributes["truthlens.outcomes"]) == ["confirmed"]
    assert call.attributes["truthlens.llm.role"] == "confirm"


def test_summary_names_the_stage_that_decided() -> None:
    clean = Detection(status="clean", score=0.0)
    kept = Detection(status="detected", score=0.9, reason="confirmed_llm")
    cleared = Detection(status="clean", score=0.0, reason="cleared_llm")
    failed = Detection(status="detected", score=0.9, reason="confirm_timeout")
    assert summarize([clean], "clean") == ("not_needed", None)
    assert summarize([cleared, clean], "clean") == ("cleared", None)
    assert summarize([kept, cleared], "detected") == ("confirmed", None)
    assert summarize([kept, failed], "detected") == ("unavailable", "timeout")
    assert summarize([Detection.unavailable("timeout")], "unavailable") is None
