"""CPU runs: each row at its own length, checks overlapping instead of padded batches.

Real parts: the shipped detector model (int8 ONNX) and a hand-weighted lookup model, both run
by real ONNX Runtime through the real tokenizer and pipeline. Nothing is scripted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.backends.onnx import CPU, OnnxRunner, intra_op_threads
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import load_manifest
from truthlens.detector.types import DetectionInput, DetectorSettings

CONTEXT = (
    "The Eiffel Tower is 330 metres tall and was completed in March 1889 for the World's Fair.",
    "It was designed by the engineering company of Gustave Eiffel and is made of wrought iron.",
)
ITEMS = [
    DetectionInput(CONTEXT, "How tall is the tower?", "The tower is 330 metres tall."),
    DetectionInput(CONTEXT, "When was it completed?", "It was completed in 1901 by a Berlin company."),
    DetectionInput(CONTEXT, "Who designed it?", "Gustave Eiffel's company designed it, in wrought iron."),
    DetectionInput(CONTEXT * 8, "What is it made of?", "It is made of steel and glass, and it is 500 metres tall."),
    DetectionInput((), "Say hi.", "Hi."),
]


def _engine(model_dir: Path, **kw: object) -> DetectorEngine:
    settings = DetectorSettings(model_dir=str(model_dir), provider="cpu", **kw)  # type: ignore[arg-type]
    detector = create_detector(settings)
    assert isinstance(detector, DetectorEngine)
    return detector


async def test_a_checks_verdict_does_not_depend_on_what_else_is_in_flight(shipped_model_dir: Path) -> None:
    # One check at a time, then all at once with batching allowed (8 rows, 50 ms to gather):
    # int8 quantises activations per tensor, so a row padded beside others would score differently.
    alone = _engine(shipped_model_dir, max_in_flight=1, max_batch_size=1, intra_op_threads=1)
    together = _engine(shipped_model_dir, max_in_flight=1, max_batch_size=8, max_wait_ms=50.0, intra_op_threads=1)
    try:
        expected = [await alone.detect(item, threshold=0.5) for item in ITEMS]
        got = await together.detect_many(ITEMS * 2, threshold=0.5)
        assert together.batcher.stats.largest_batch > 1  # the rows did meet in one batch
        for want, have in zip(expected * 2, got, strict=True):
            assert have.status == want.status
            assert have.score == pytest.approx(want.score, abs=1e-6)
            assert [(s.start, s.end, s.text) for s in have.spans] == [(s.start, s.end, s.text) for s in want.spans]
            assert [s.prob for s in have.spans] == pytest.approx([s.prob for s in want.spans], abs=1e-6)
    finally:
        await alone.close()
        await together.close()


async def test_rows_of_different_lengths_score_as_if_run_alone(shipped_model_dir: Path) -> None:
    engine = _engine(shipped_model_dir, max_in_flight=1, max_batch_size=8, intra_op_threads=1)
    try:
        scores = [await engine.token_scores(item) for item in ITEMS[:3]]
        batched = await asyncio.gather(*(engine.token_scores(item) for item in ITEMS[:3]))
        for a, b in zip(scores, batched, strict=True):
            np.testing.assert_allclose(b.probs, a.probs, atol=1e-6)
    finally:
        await engine.close()


async def test_runs_in_flight_share_the_cores_and_overlap(tiny_model_dir: Path) -> None:
    engine = _engine(tiny_model_dir, max_in_flight=2, max_batch_size=8, evidence_checks=False)
    try:
        assert engine.settings.max_batch_size == 1  # batches of one row, so two runs overlap
        items = [DetectionInput(CONTEXT, "q", f"Answer {i} says Berlin.") for i in range(12)]
        results = await engine.detect_many(items, threshold=0.5)
        assert all(r.detected and r.spans[0].text == "Berlin" for r in results)
        assert engine.batcher.stats.runs == 12 and engine.queue_depth == 0
    finally:
        await engine.close()


def test_a_lone_row_gets_a_session_with_every_core(shipped_model_dir: Path) -> None:
    import os

    manifest = load_manifest(shipped_model_dir)
    cores = len(os.sched_getaffinity(0))
    assert OnnxRunner(manifest, DetectorSettings(provider="cpu", max_in_flight=2), 0).sessions == (2 if cores > 1 else 1)
    # Threads set by the operator, or one run at a time: one session, as configured.
    assert OnnxRunner(manifest, DetectorSettings(provider="cpu", max_in_flight=2, intra_op_threads=1), 0).sessions == 1
    assert OnnxRunner(manifest, DetectorSettings(provider="cpu", max_in_flight=1), 0).sessions == 1


async def test_a_row_scores_the_same_on_every_core_as_on_its_share(shipped_model_dir: Path) -> None:
    # One check at a time: each row runs alone on the wide session; all at once: on the split one.
    engine = _engine(shipped_model_dir, max_in_flight=2)
    try:
        alone = [await engine.token_scores(item) for item in ITEMS]
        together = await asyncio.gather(*(engine.token_scores(item) for item in ITEMS))
        for a, b in zip(alone, together, strict=True):
            np.testing.assert_allclose(b.probs, a.probs, atol=1e-5)
    finally:
        await engine.close()


@pytest.mark.parametrize(
    ("configured", "in_flight", "provider", "expected"),
    [(0, 2, CPU, "half"), (3, 2, CPU, 3), (0, 1, CPU, 0), (0, 2, "CUDAExecutionProvider", 0)],
)
def test_threads_per_run(configured: int, in_flight: int, provider: str, expected: object) -> None:
    import os

    settings = DetectorSettings(intra_op_threads=configured, max_in_flight=in_flight)
    cores = len(os.sched_getaffinity(0))
    assert intra_op_threads(settings, provider) == (max(1, cores // 2) if expected == "half" else expected)


def test_the_int8_kernels_named_at_start_up_are_the_best_the_cpu_flags_offer() -> None:
    from truthlens.detector.backends.onnx import int8_kernels

    def cpu(flags: str) -> str:
        return f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 {flags}\n\nprocessor\t: 1\n"

    assert int8_kernels(cpu("avx2 avx512bw avx512_vnni")) == "AVX512-VNNI"
    assert int8_kernels(cpu("avx2 avx_vnni")) == "AVX-VNNI"
    assert int8_kernels(cpu("avx2 avx512bw amx_int8 avx512_vnni")) == "AMX"
    assert int8_kernels(cpu("avx2")) == "AVX2"
    assert int8_kernels(cpu("")) == "SSE"
    assert int8_kernels("Processor\t: ARMv8\nFeatures\t: fp asimd\n") == "unknown"  # no x86 flags line


def test_the_start_up_log_names_the_options_each_session_was_loaded_with(shipped_model_dir: Path) -> None:
    import os

    manifest = load_manifest(shipped_model_dir)
    one = OnnxRunner(manifest, DetectorSettings(provider="cpu", max_in_flight=1), 0).options_text()
    assert one == "graph optimisation all, sequential, arena on, memory pattern on, idle workers spin"
    if len(os.sched_getaffinity(0)) > 1:
        # The lone-row session's workers sleep (read back from that session, not assumed).
        split = OnnxRunner(manifest, DetectorSettings(provider="cpu", max_in_flight=2), 0).options_text()
        assert split == f"{one}; every-core session {one.replace('workers spin', 'workers sleep')}"
