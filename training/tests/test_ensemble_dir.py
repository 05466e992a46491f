"""Making an ensemble model directory (``python -m training.ensemble``).

Real parts: the shipped model's directory, copied, and the real ONNX detector loading the
result; nothing is scripted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from training.ensemble import main, make_ensemble
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import DEFAULT_MODEL_DIR, load_manifest
from truthlens.detector.types import DetectionInput, DetectorSettings


def _model(tmp_path: Path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    return copy


async def test_a_path_member_is_copied_in_and_builtin_is_referred_to(tmp_path: Path) -> None:
    out = tmp_path / "ensemble"
    assert main(["--model", str(_model(tmp_path)), "--member", str(DEFAULT_MODEL_DIR), "builtin",
                 "--out", str(out)]) == 0
    manifest = load_manifest(out)
    assert manifest.ensemble == (out / "member-1", DEFAULT_MODEL_DIR)
    assert (out / "member-1" / "model.onnx").stat().st_size == (DEFAULT_MODEL_DIR / "model.onnx").stat().st_size
    # The verdict was fitted on one model's probabilities: it is dropped until refitted.
    assert manifest.verdict is None
    raw = json.loads((out / "manifest.json").read_text())
    assert raw["calibration"]["token_threshold"] == load_manifest(DEFAULT_MODEL_DIR).token_threshold

    detector = create_detector(DetectorSettings(model_dir=str(out), provider="cpu", intra_op_threads=1))
    assert isinstance(detector, DetectorEngine)
    item = DetectionInput(("Paris is the capital of France.",), "Capital?", "The capital of France is Lyon.")
    scores = await detector.token_scores(item)
    await detector.close()
    alone = create_detector(DetectorSettings(provider="cpu", intra_op_threads=1))
    assert isinstance(alone, DetectorEngine)
    own = await alone.token_scores(item)
    await alone.close()
    # Three copies of one model: their mean is the model's own probability, run three times.
    assert scores.rows == 3 * own.rows
    assert scores.probs == pytest.approx(own.probs, abs=1e-5)


def test_an_ensemble_of_an_ensemble_and_one_without_members_are_refused(tmp_path: Path) -> None:
    first = tmp_path / "first"
    make_ensemble(_model(tmp_path), ["builtin"], first)
    with pytest.raises(ValueError, match="is an ensemble already"):
        make_ensemble(first, ["builtin"], tmp_path / "second")
    with pytest.raises(ValueError, match="at least one member"):
        make_ensemble(DEFAULT_MODEL_DIR, [], tmp_path / "third")
