"""The per-task probability fit (:mod:`training.calibrate_tasks`): it recovers a known map from seeded
draws, and its calibration error tells a calibrated score from a miscalibrated one."""

from __future__ import annotations

import numpy as np
import pytest

from training.calibrate_tasks import TIED, balanced_accuracy, chosen, ece, fit_map, reliability
from truthlens.detector.calibration.probability import TaskProbability


@pytest.mark.parametrize(("slope", "intercept", "prior"), [(1.5, -0.4, 0.3), (0.6, 0.8, 0.65)])
def test_the_fit_recovers_a_known_map(slope: float, intercept: float, prior: float) -> None:
    # Labels drawn from sigmoid(slope·z + intercept + logit(prior)); the fit weighs both classes
    # the same, so it returns the likelihood-ratio part and the prior is the sample's share.
    rng = np.random.default_rng(7)
    z = rng.normal(0, 2, 40_000)
    truth = TaskProbability(slope, intercept, prior)
    y = (rng.random(len(z)) < np.array([truth(float(v)) for v in z])).astype(float)
    fitted_slope, fitted_intercept = fit_map(z, y)
    assert fitted_slope == pytest.approx(slope, abs=0.05)
    # The balanced fit's intercept absorbs the sample's own prior: add it back and compare.
    sample = y.mean()
    recovered = fitted_intercept + np.log(sample / (1 - sample))
    assert recovered == pytest.approx(intercept + np.log(prior / (1 - prior)), abs=0.08)


def test_the_calibration_error_separates_calibrated_from_overconfident_scores() -> None:
    rng = np.random.default_rng(11)
    p = rng.random(20_000)
    y = (rng.random(len(p)) < p).astype(float)
    assert ece(p, y) < 0.02
    overconfident = np.where(p > 0.5, 0.99, 0.01)
    assert ece(overconfident, y) > 0.2
    bins = reliability(p, y)
    assert sum(n for _, _, n in bins) == len(p)
    assert all(abs(mean - rate) < 0.05 for mean, rate, _ in bins)


def test_a_task_with_one_class_cannot_be_fitted() -> None:
    with pytest.raises(ValueError, match="both faithful and hallucinated"):
        fit_map(np.array([0.1, 0.2]), np.array([1.0, 1.0]))


def test_balanced_accuracy_weighs_both_classes_the_same() -> None:
    p = np.array([0.9, 0.8, 0.1, 0.7, 0.2, 0.1])
    y = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    # At 0.5: recall 2/3, faithful left clean 2/3; at 0.05 everything is flagged: 1 and 0.
    assert balanced_accuracy(p, y, 0.5) == pytest.approx(2 / 3)
    assert balanced_accuracy(p, y, 0.05) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(3))
def test_the_default_is_the_highest_threshold_tied_with_the_best(seed: int) -> None:
    rng = np.random.default_rng(seed)
    grid = [round(0.1 + 0.05 * i, 2) for i in range(13)]
    scores = {f"{t:g}": float(v) for t, v in zip(grid, rng.uniform(0.6, 0.75, len(grid)), strict=True)}
    pick = chosen(scores)
    best = max(scores.values())
    assert scores[f"{pick:g}"] >= best - TIED
    assert all(v < best - TIED for t, v in scores.items() if float(t) > pick)
