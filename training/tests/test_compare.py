"""The paired bootstrap that compares two models' out-of-fold verdicts (training/compare.py).
Pure numpy on made-up scores; no model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from training.compare import OutOfFold, compare
from training.evaluate import auroc


def _oof(log_odds: np.ndarray, hallucinated: np.ndarray, sets: np.ndarray) -> OutOfFold:
    return OutOfFold(sets, hallucinated, log_odds, np.array([f"a{i}" for i in range(len(sets))]))


def test_auroc_is_the_chance_a_positive_outranks_a_negative_ties_counting_half() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=300).astype(float)  # many ties
    truth = rng.random(300) < 0.4
    pos, neg = scores[truth][:, None], scores[~truth][None, :]
    pairwise = float(((pos > neg) + 0.5 * (pos == neg)).mean())
    assert auroc(list(scores), list(truth)) == pytest.approx(pairwise)


def _sets(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    sets = np.array(["ragtruth qa (dev)"] * n + ["halueval qa (dev)"] * n)
    return sets, rng.random(2 * n) < 0.5


def test_a_model_against_itself_differs_by_nothing() -> None:
    sets, y = _sets(60)
    a = _oof(np.random.default_rng(2).normal(size=len(y)), y, sets)
    for row in compare(a, a, resamples=50):
        assert np.allclose(row.delta, 0.0) and np.allclose(row.low, 0.0) and np.allclose(row.high, 0.0)


def test_a_clearly_better_model_has_an_interval_clear_of_zero_and_another_guess_does_not() -> None:
    sets, y = _sets(100)
    rng = np.random.default_rng(3)
    chance = _oof(rng.normal(size=len(y)), y, sets)
    sharp = _oof(np.where(y, 1.0, -1.0) + rng.normal(scale=0.3, size=len(y)), y, sets)
    also_chance = _oof(rng.normal(size=len(y)), y, sets)
    rows = {r.name: r for r in compare(chance, sharp, resamples=300)}
    pooled = rows["ragtruth pooled"]
    assert pooled.delta[0] > 0.3 and pooled.low[0] > 0.0  # AUROC
    assert pooled.delta[1] > 0.3 and pooled.low[1] > 0.0  # balanced accuracy
    rows = {r.name: r for r in compare(chance, also_chance, resamples=300)}
    assert rows["ragtruth pooled"].low[0] < 0.0 < rows["ragtruth pooled"].high[0]


def test_a_set_of_faithful_answers_only_compares_false_alarms() -> None:
    sets = np.array(["halueval qa faithful twins (dev)"] * 40)
    y = np.zeros(40, dtype=bool)
    a = _oof(np.full(40, -1.0), y, sets)
    b = _oof(np.r_[np.full(10, 1.0), np.full(30, -1.0)], y, sets)
    (row, _pooled) = compare(a, b, resamples=100)
    assert np.isnan(row.delta[0]) and np.isnan(row.delta[1])
    assert row.delta[2] == pytest.approx(0.25)  # 10 of 40 faithful answers now flagged


def test_files_over_different_answers_are_refused(tmp_path: Path) -> None:
    sets, y = _sets(10)
    a = _oof(np.zeros(len(y)), y, sets)
    a.save(tmp_path / "a.npz")
    loaded = OutOfFold.load(tmp_path / "a.npz")
    assert np.array_equal(loaded.log_odds, a.log_odds) and np.array_equal(loaded.sets, a.sets)
    other = OutOfFold(a.sets, a.hallucinated, a.log_odds, a.answers[::-1])
    with pytest.raises(ValueError, match="different answers"):
        compare(a, other, resamples=10)
