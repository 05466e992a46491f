"""The verdict's probability map (:mod:`truthlens.detector.calibration.probability`): monotone, bounded, read from
the manifest (a missing or bad block is named at start-up), and the score the engine serves.

The map tests are pure (seeded draws of maps and log-odds). The engine test runs the tiny
hand-weighted ONNX model (conftest) through the real pipeline with a verdict and a map written
into its manifest, so the expected score is computed from the map by hand.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.calibration.probability import TaskProbability, logit, parse
from truthlens.detector.manifest import DEFAULT_MODEL_DIR, ModelDirError, load_manifest
from truthlens.detector.prompt import SHAPES
from truthlens.detector.types import DetectionInput, DetectorSettings
from truthlens.detector.verdict import FEATURES


@pytest.mark.parametrize("seed", range(5))
def test_the_map_is_strictly_increasing_and_bounded(seed: int) -> None:
    rng = np.random.default_rng(seed)
    task = TaskProbability(float(rng.uniform(0.05, 5)), float(rng.normal(0, 2)), float(rng.uniform(0.01, 0.99)))
    z = np.sort(rng.normal(0, 4, 400))
    p = np.array([task(float(v)) for v in z])
    assert np.all((p >= 0.0) & (p <= 1.0))
    assert np.all(np.diff(p) >= 0.0)
    # Strictly where it is not saturated in floating point: answers keep their order.
    inner = (p > 1e-12) & (p < 1 - 1e-12)
    assert np.all(np.diff(p[inner]) > 0.0)
    for extreme in (-1e6, 1e6):  # no overflow at the ends
        assert 0.0 <= task(extreme) <= 1.0


def test_the_prior_is_the_probability_where_the_likelihood_ratio_is_one() -> None:
    task = TaskProbability(slope=2.0, intercept=0.5, prior=0.3)
    at_even_odds = -0.5 / 2.0  # slope * z + intercept == 0
    assert task(at_even_odds) == pytest.approx(0.3)
    # Raising the prior raises every answer's probability, never reorders them.
    higher = TaskProbability(2.0, 0.5, 0.6)
    assert all(higher(z) > task(z) for z in (-3.0, 0.0, 3.0))
    assert logit(task(1.0)) - logit(0.3) == pytest.approx(2.0 * 1.0 + 0.5)


def _block() -> dict[str, Any]:
    return {"tasks": {shape: {"slope": 1.5, "intercept": -0.2, "prior": 0.4} for shape in SHAPES}}


def _broken(path: tuple[str, ...], value: object) -> dict[str, Any]:
    block = _block()
    target: Any = block
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return block


_DELETE = object()


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (None, "'verdict.probability' is missing"),
        ({"maps": {}}, "'verdict.probability.tasks' must give one map per task shape"),
        (_broken(("tasks", "record"), _DELETE), "'verdict.probability.tasks' must give one map per task shape"),
        (_broken(("tasks", "passages", "slope"), -1.0), r"'verdict.probability.tasks.passages': 'slope' must be positive"),
        (_broken(("tasks", "article", "slope"), 0.0), r"'verdict.probability.tasks.article': 'slope' must be positive"),
        (_broken(("tasks", "record", "prior"), 1.0), r"'verdict.probability.tasks.record': 'prior' must be in \(0, 1\)"),
        (_broken(("tasks", "record", "intercept"), "nan"), r"tasks.record': 'intercept' must be a finite number"),
        (_broken(("tasks", "passages"), [1, 2]), r"tasks.passages': must be an object"),
    ],
)
def test_a_missing_or_bad_block_is_named_at_start_up(
    tmp_path: Path, tiny_model_dir: Path, block: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse(block)
    # The same through the manifest: the model directory does not load.
    directory = _with_block(tmp_path, tiny_model_dir, block)
    with pytest.raises(ModelDirError, match=message):
        load_manifest(directory)


def test_the_shipped_manifest_has_a_map_per_task() -> None:
    verdict = load_manifest(DEFAULT_MODEL_DIR).verdict
    assert verdict is not None
    assert set(verdict.probability) == set(SHAPES)
    for task in verdict.probability.values():
        assert task.slope > 0 and 0 < task.prior < 1


def _with_block(tmp_path: Path, source: Path, block: dict[str, Any] | None) -> Path:
    directory = tmp_path / "m"
    directory.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (directory / name).write_bytes((source / name).read_bytes())
    raw = json.loads((source / "manifest.json").read_text())
    n = len(FEATURES)
    weights = [0.0] * n
    weights[FEATURES.index("numbers_dates")] = 10.0
    model = {"features": list(FEATURES), "mean": [0.0] * n, "scale": [1.0] * n, "weights": weights,
             "bias": -1.0, "shift": 0.7}
    raw["verdict"] = {
        "models": {shape: copy.deepcopy(model) for shape in SHAPES},
        "token_rules": {"token_threshold": 0.5, "aggregation": "noisy_or", "min_span_length": 1},
    }
    if block is not None:
        raw["verdict"]["probability"] = block
    (directory / "manifest.json").write_text(json.dumps(raw))
    return directory


async def test_the_engine_serves_the_calibrated_probability(tmp_path: Path, tiny_model_dir: Path) -> None:
    # The verdict reads only the number/date findings: log-odds 10·log(2) − 1 for the answer whose
    # year the context does not state, −1 for the one without a finding. The served score is the
    # map of those (not the model's shifted score), and the route threshold applies to it.
    block = {"tasks": {shape: {"slope": 0.5, "intercept": -0.3, "prior": 0.2} for shape in SHAPES}}
    directory = _with_block(tmp_path, tiny_model_dir, block)
    context = ["The museum in Berlin opened in 1931."]
    wrong = DetectionInput(context, "When did it open?", "The museum in Berlin opened in 1925.")
    right = DetectionInput(context, "Where is it?", "The museum is in Berlin.")
    detector = create_detector(DetectorSettings(model_dir=str(directory), chunk_aggregation="max"))
    try:
        flagged = await detector.detect(wrong, threshold=0.5)
        clean = await detector.detect(right, threshold=0.5)
        strict = await detector.detect(wrong, threshold=0.9)
    finally:
        await detector.close()

    def expected(z: float) -> float:
        return 1 / (1 + math.exp(-(0.5 * z - 0.3 + math.log(0.2 / 0.8))))

    assert flagged.score == pytest.approx(expected(10 * math.log(2) - 1))
    assert flagged.status == "detected"  # about 0.78 >= 0.5
    assert clean.score == pytest.approx(expected(-1.0)) and clean.status == "clean"
    assert strict.status == "clean"  # the same probability under a stricter route
