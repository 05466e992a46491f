"""The ONNX detector end to end: real ONNX Runtime, real tokenizer, real batching.

The model is the hand-weighted lookup graph from ``conftest.py`` (flags fixed words,
whatever the context), so outcomes are exact; nothing else is scripted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import pytest

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.types import DetectionInput, DetectorSettings, InvalidInput

from .conftest import write_lookup_model

CONTEXT = ("Paris is the capital of France. The tower was finished in 1889.",)


def _detector(model_dir: Path, **overrides: object) -> DetectorEngine:
    settings = DetectorSettings(model_dir=str(model_dir), provider="cpu", intra_op_threads=1, **overrides)  # type: ignore[arg-type]
    detector = create_detector(settings)
    assert isinstance(detector, DetectorEngine)
    return detector


async def test_flags_the_wrong_word_with_exact_offsets(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    answer = "The capital of France is Lyon, and the tower dates from 1889."
    result = await detector.detect(DetectionInput(CONTEXT, "Capital?", answer), threshold=0.5)
    assert result.status == "detected" and result.detected
    assert [(s.text, s.start) for s in result.spans] == [("Lyon", answer.index("Lyon"))]
    assert result.score == pytest.approx(result.spans[0].prob)
    assert result.chunks == 1 and result.answer_tokens > 10 and result.latency_ms > 0
    clean = await detector.detect(DetectionInput(CONTEXT, "Capital?", "The capital is Paris."), threshold=0.5)
    assert clean.status == "clean" and clean.spans == () and clean.score == 0.0
    await detector.close()


async def test_each_span_names_its_fact_passage_and_what_the_passage_states(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    context = ("Lyon has a large old town.", *CONTEXT)  # passage 1 is the one about the claims
    answer = "The capital of France is Berlin, and the tower was finished in 1925."
    result = await detector.detect(DetectionInput(context, "Capital?", answer), threshold=0.5)
    found = {s.text: (s.reason, s.fact, s.passage, s.evidence, s.context_fact) for s in result.spans}
    assert found == {
        "Berlin": ("unsupported_entity", "Berlin", 1, "Paris is the capital of France.", "Paris"),
        "1925": ("unsupported_date", "1925", 1, "The tower was finished in 1889.", "1889"),
    }
    await detector.close()


async def test_threshold_is_applied_per_call(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    item = DetectionInput(CONTEXT, "Capital?", "It is Lyon.")
    low = await detector.detect(item, threshold=0.5)
    high = await detector.detect(item, threshold=0.999)
    assert low.score == high.score and low.detected and not high.detected
    await detector.close()


async def test_unset_token_threshold_is_the_models_calibrated_one(tmp_path: Path, tokenizer_file: Path) -> None:
    directory = write_lookup_model(tmp_path / "calibrated", tokenizer_file)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["calibration"] = {"token_threshold": 0.99}  # above the lookup model's P≈0.98
    (directory / "manifest.json").write_text(json.dumps(manifest))
    item = DetectionInput(CONTEXT, "Capital?", "It is Lyon.")
    calibrated = _detector(directory, evidence_checks=False)  # the model's probabilities alone
    assert calibrated.token_threshold == 0.99
    assert (await calibrated.detect(item, threshold=0.5)).spans == ()
    await calibrated.close()
    configured = _detector(directory, token_threshold=0.5, evidence_checks=False)  # a deployment's setting wins
    assert configured.token_threshold == 0.5
    assert [s.text for s in (await configured.detect(item, threshold=0.5)).spans] == ["Lyon"]
    await configured.close()


async def test_multibyte_answer_spans_slice_the_answer(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    answer = "Café 😀 ist in 北京 und nicht in Lyon ✓."
    result = await detector.detect(DetectionInput(CONTEXT, "Wo?", answer), threshold=0.5)
    assert [s.text for s in result.spans] == ["北", "Lyon"]
    for span in result.spans:
        assert answer[span.start : span.end] == span.text
    await detector.close()


async def test_wrong_fact_at_the_end_of_a_long_answer_beside_long_context(tiny_short_model_dir: Path) -> None:
    detector = _detector(tiny_short_model_dir, chunk_aggregation="max")  # the window x chunk plan
    context = tuple("the river runs past the old mill and the bridge " * 6 for _ in range(6))
    answer = "the town has a market and a school " * 20 + "and it opened in 1925."
    result = await detector.detect(DetectionInput(context, "When?", answer), threshold=0.5)
    assert result.detected
    assert [s.text for s in result.spans] == ["1925"]
    assert result.chunks > 10  # several answer windows x several context chunks
    await detector.close()


async def test_many_concurrent_callers_need_fewer_onnx_runs(tiny_model_dir: Path) -> None:
    # The model's verdicts alone: the numbers in these answers are not in the context.
    detector = _detector(tiny_model_dir, max_batch_size=8, max_wait_ms=20.0, evidence_checks=False)
    items = [DetectionInput(CONTEXT, "q", f"Answer number {i} says Berlin.") for i in range(24)]
    results = await detector.detect_many(items, threshold=0.5)
    assert all(r.detected and r.spans[0].text == "Berlin" for r in results)
    stats = detector.batcher.stats
    assert stats.rows == 24 and stats.runs < 24 and stats.largest_batch > 1
    assert detector.queue_depth == 0
    await detector.close()


async def test_saturation_comes_back_unavailable_overloaded(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir, max_queue=2, max_wait_ms=50.0, evidence_checks=False)
    items = [DetectionInput(CONTEXT, "q", f"Answer {i}.") for i in range(6)]
    results = await detector.detect_many(items, threshold=0.5)
    reasons = sorted(r.reason or r.status for r in results)
    assert reasons.count("overloaded") >= 1
    assert all(r.status in ("clean", "unavailable") for r in results)
    assert all(r.score is None for r in results if r.status == "unavailable")
    await detector.close()


async def test_timeout_is_unavailable_never_clean(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir, max_wait_ms=200.0)
    item = DetectionInput(CONTEXT, "q", "Paris.")
    result = await detector.detect(item, threshold=0.5, timeout_s=0.02)
    assert result.status == "unavailable" and result.reason == "timeout" and result.score is None
    await asyncio.sleep(0.25)
    assert detector.queue_depth == 0 and detector.batcher.pending_rows == 0
    await detector.close()


async def test_model_failure_is_unavailable(tmp_path: Path, tokenizer_file: Path) -> None:
    # The lookup table is shorter than the vocabulary: Gather fails inside ONNX Runtime.
    model = write_lookup_model(tmp_path / "broken", tokenizer_file, table_rows=50)
    detector = _detector(model)
    result = await detector.detect(DetectionInput(CONTEXT, "q", "Paris."), threshold=0.5)
    assert result.status == "unavailable" and result.reason == "model_error"
    await detector.close()


async def test_empty_answer_is_clean_with_nothing_checked(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    for answer in ("", "   \n"):
        result = await detector.detect(DetectionInput(CONTEXT, "q", answer), threshold=0.5)
        assert (result.status, result.score, result.answer_tokens, result.chunks) == ("clean", 0.0, 0, 0)
    assert detector.batcher.stats.runs == 0
    await detector.close()


async def test_empty_context_still_runs(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    result = await detector.detect(DetectionInput((), "q", "It was Berlin."), threshold=0.5)
    assert result.detected and result.chunks == 1
    await detector.close()


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (DetectionInput(CONTEXT, "q", 42), "answer must be a string"),  # type: ignore[arg-type]
        (DetectionInput(CONTEXT, None, "a"), "question must be a string"),  # type: ignore[arg-type]
        (DetectionInput("one passage", "q", "a"), "context must be a list of strings"),
        (DetectionInput(("ok", 3), "q", "a"), r"context\[1\] must be a string"),  # type: ignore[arg-type]
        (DetectionInput(CONTEXT, "q", "bad \ud800"), "not valid Unicode"),
    ],
)
async def test_bad_input_raises_invalid_input(tiny_model_dir: Path, item: DetectionInput, message: str) -> None:
    detector = _detector(tiny_model_dir)
    with pytest.raises(InvalidInput, match=message):
        await detector.detect(item, threshold=0.5)
    assert detector.queue_depth == 0
    await detector.close()


async def test_huge_answer_is_refused_quickly(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    answer = "x" * (5 * 1024 * 1024)
    started = time.perf_counter()
    with pytest.raises(InvalidInput, match="over max_answer_chars=200000"):
        await detector.detect(DetectionInput(CONTEXT, "q", answer), threshold=0.5)
    assert time.perf_counter() - started < 1.0
    with pytest.raises(InvalidInput, match="over max_context_chars"):
        await detector.detect(DetectionInput(("y" * 2_000_001,), "q", "a"), threshold=0.5)
    with pytest.raises(InvalidInput, match="threshold"):
        await detector.detect(DetectionInput(CONTEXT, "q", "a"), threshold=1.5)
    await detector.close()


async def test_provider_is_logged_at_start(tiny_model_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="truthlens.detector.backends.onnx"):
        detector = _detector(tiny_model_dir)
    assert detector.provider == "CPUExecutionProvider"
    assert "CPUExecutionProvider" in caplog.text
    await detector.close()


def test_aggregate_combines_chunks_then_takes_max_over_windows() -> None:
    import numpy as np

    from truthlens.detector.chunking import Plan, Window
    from truthlens.detector.scoring.token_scorer import aggregate

    # two answer windows over 5 tokens ([0,3) and [2,5)), each beside two context chunks
    plan = Plan(rows=(), windows=(Window(0, 3), Window(0, 3), Window(2, 5), Window(2, 5)), chunks=2)
    outputs = [
        np.array([0.9, 0.1, 0.2], dtype=np.float32),  # window 1, chunk 1
        np.array([0.2, 0.8, 0.3], dtype=np.float32),  # window 1, chunk 2
        np.array([0.6, 0.1, 0.7], dtype=np.float32),  # window 2, chunk 1
        np.array([0.1, 0.9, 0.6], dtype=np.float32),  # window 2, chunk 2
    ]
    assert aggregate(5, plan, outputs, "max").tolist() == pytest.approx([0.9, 0.8, 0.6, 0.9, 0.7])
    assert aggregate(5, plan, outputs, "min").tolist() == pytest.approx([0.2, 0.1, 0.2, 0.1, 0.6])
    # best: window 1 reads chunk 2 (mean 0.43 < 0.4? no: chunk 1 mean 0.40), window 2 reads chunk 1
    assert aggregate(5, plan, outputs, "best").tolist() == pytest.approx([0.9, 0.1, 0.6, 0.1, 0.7])
