"""The verdict fit's options that shape where scores are cached and which features a fit reads.

Small and offline: the score cache is exercised with a stand-in for the engine that only names a
model graph (a temporary file; what the cache key reads of it is its bytes), so no model runs.
"""

from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from training import verdict, verdict_data
from training.scoring import Case
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.types import DetectionInput
from truthlens.detector.verdict import VerdictModel


def _engine(tmp_path: Path) -> DetectorEngine:
    graph = tmp_path / "model.onnx"
    graph.write_bytes(b"a graph's bytes")
    return cast(DetectorEngine, SimpleNamespace(manifest=SimpleNamespace(model_path=graph, ensemble=())))


def test_scores_are_read_from_the_cache_the_fit_is_given(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    cases = [Case(DetectionInput(("Paris is the capital of France.",), "What is the capital?", "Paris."), False)]
    cache = tmp_path / "elsewhere"
    cache.mkdir()
    raw = verdict_data.Raw(cases[0], np.array([0.1, 0.2], dtype=np.float32), np.array([[0, 5], [5, 6]]), None)
    key = verdict_data._key(engine, "one set (dev)", cases, False)
    (cache / key).write_bytes(pickle.dumps([raw]))
    # Found there, nothing is scored (the stand-in engine could not score anything).
    out = verdict_data.load_or_score(engine, {"one set (dev)": cases}, with_support=False, cache=cache)
    assert [r.case for r in out["one set (dev)"]] == cases
    assert np.allclose(out["one set (dev)"][0].probs, [0.1, 0.2])
    assert sorted(p.name for p in cache.iterdir()) == [key]  # nothing else written there


def _args(**changes: object) -> argparse.Namespace:
    base = dict(items=verdict.ITEMS, summarization_items=verdict.SUMMARIZATION_ITEMS, no_train_part=False,
                report_only=[], human_dev=Path("training/output/llm5"), support=False, check_features=False,
                leave_out=[], mixups=verdict.MIXUPS, mixup_weight=verdict.MIXUP_WEIGHT)
    base.update(changes)
    return argparse.Namespace(**base)


def test_the_recorded_command_names_the_features_left_out() -> None:
    # The manifest's command must refit the same models: a feature left out is part of it.
    assert verdict._command(_args()) == "python -m training.verdict --human-dev training/output/llm5 --write"
    assert verdict._command(_args(leave_out=["close_moves"])) == (
        "python -m training.verdict --human-dev training/output/llm5 --leave-out close_moves --write")


def test_an_unknown_feature_to_leave_out_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        verdict.main(["--leave-out", "closeness"])
    assert stopped.value.code == 2
    assert "closeness" in capsys.readouterr().err


def _model(bias: float) -> VerdictModel:
    return VerdictModel(("peak", "spans"), np.array([0.5, 0.2]), np.array([0.1, 0.3]),
                                np.array([1.0, 0.5]), bias, 0.0)


def test_saved_fold_models_are_read_back_per_shape(tmp_path: Path) -> None:
    path = tmp_path / "folds.json"
    saved = {shape: [_model(float(g)) for g in range(verdict.FOLDS)] for shape in ("passages", "article", "record")}
    path.write_text(json.dumps({k: [m.to_json() for m in v] for k, v in saved.items()}))
    folds = verdict.load_folds(path)
    assert [m.bias for m in folds["article"]] == [float(g) for g in range(verdict.FOLDS)]
    x = verdict.design([{"peak": 0.6, "spans": 0.2, "names": 3.0}], folds["record"][2].names)
    assert verdict.log_odds(folds["record"][2], x)[0] == pytest.approx(1.0 * 1.0 + 0.0 + 2.0)


def test_fold_models_missing_for_a_shape_are_named(tmp_path: Path) -> None:
    path = tmp_path / "folds.json"
    path.write_text(json.dumps({"passages": [_model(0.0).to_json()] * verdict.FOLDS}))
    with pytest.raises(ValueError, match="article, record"):
        verdict.load_folds(path)


def test_saved_folds_score_but_never_write_a_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        verdict.main(["--folds", str(tmp_path / "folds.json"), "--write"])
    assert stopped.value.code == 2
    assert "--folds" in capsys.readouterr().err


def test_the_shipped_fold_models_read_the_shipped_verdicts_features() -> None:
    # The fold models a --write refit stores beside the manifest's verdict: the fit a later refit
    # is compared with (--folds) must be that verdict's.
    manifest = json.loads((Path("src/truthlens/detector/default_model/manifest.json")).read_text())
    folds = verdict.load_folds(verdict.SHIPPED_FOLDS)
    for shape, model in manifest["verdict"]["models"].items():
        assert all(list(m.names) == model["features"] for m in folds[shape])
