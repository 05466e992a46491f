"""ACR eq. 10–15 (calibration) pinned against hand-computed values. Pure math: nothing scripted."""

from __future__ import annotations

import math

import pytest

from truthlens.modes.acr import calibrate
from truthlens.modes.acr.calibration import EPS, logit, sigmoid


def _by_hand(ps: list[float], omega: float = 1.0, xi: float = 1.0) -> tuple[float, float]:
    ls = [math.log(p / (1 - p)) for p in ps]
    m = len(ls)
    mean = sum(ls) / m
    var = sum((x - mean) ** 2 for x in ls) / (m - 1)
    tau = (omega + m / 2) / (xi + m * var / 2)
    var_l = 1 / ((m + 1) * tau)
    mu = 1 / (1 + math.exp(-mean))
    return mu, math.sqrt(mu * (1 - mu) * var_l)


@pytest.mark.parametrize("ps", [[0.9, 0.8, 0.85], [0.2, 0.6, 0.4, 0.5], [0.55, 0.45]])
def test_matches_equations_11_to_15(ps: list[float]) -> None:
    mu, sigma = calibrate(ps)
    want_mu, want_sigma = _by_hand(ps)
    assert mu == pytest.approx(want_mu, rel=1e-12)
    assert sigma == pytest.approx(want_sigma, rel=1e-12)


def test_known_value_three_samples() -> None:
    # ℓ = logit(0.9, 0.8, 0.85): mean 1.7733, var 0.1219; τ̂ = 2.5 / 1.1829; Var = 1 / (4 τ̂)
    mu, sigma = calibrate([0.9, 0.8, 0.85])
    assert mu == pytest.approx(0.854794, abs=1e-6)
    assert sigma == pytest.approx(0.124472, abs=1e-6)


def test_identical_samples_keep_a_prior_width() -> None:
    # σ²_ℓ = 0 → τ̂ = ω + M/2 = 2.5 (M = 3); the Gamma prior keeps σ > 0.
    mu, sigma = calibrate([0.7, 0.7, 0.7])
    assert mu == pytest.approx(0.7)
    assert sigma == pytest.approx(math.sqrt(0.7 * 0.3 / (4 * 2.5)))
    assert sigma > 0


def test_more_samples_narrow_sigma() -> None:
    _, few = calibrate([0.7] * 2)
    _, many = calibrate([0.7] * 20)
    assert many < few


def test_spread_widens_sigma_at_equal_mean() -> None:
    _, tight = calibrate([0.5, 0.5, 0.5])
    _, loose = calibrate([0.2, 0.5, 0.8])
    assert loose > tight


def test_prior_enters_tau() -> None:
    mu1, s1 = calibrate([0.6, 0.8], prior=(1.0, 1.0))
    mu2, s2 = calibrate([0.6, 0.8], prior=(5.0, 1.0))
    assert mu1 == pytest.approx(mu2)
    assert s2 < s1  # a stronger precision prior narrows σ


def test_probabilities_zero_and_one_are_clipped_not_infinite() -> None:
    mu, sigma = calibrate([0.0, 1.0])
    assert math.isfinite(mu) and math.isfinite(sigma)
    assert mu == pytest.approx(0.5, abs=1e-9)  # symmetric clipping
    assert logit(0.0) == pytest.approx(math.log(EPS / (1 - EPS)))
    mu1, _ = calibrate([1.0, 1.0])
    assert mu1 == pytest.approx(1 - EPS)


def test_two_samples_is_the_minimum() -> None:
    assert calibrate([0.3, 0.6])[0] == pytest.approx(_by_hand([0.3, 0.6])[0])
    with pytest.raises(ValueError, match="at least 2"):
        calibrate([0.9])
    with pytest.raises(ValueError, match="at least 2"):
        calibrate([])


@pytest.mark.parametrize("bad", [[0.5, 1.2], [-0.1, 0.5], [0.5, float("nan")]])
def test_rejects_non_probabilities(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="not a probability"):
        calibrate(bad)


def test_rejects_non_positive_prior() -> None:
    with pytest.raises(ValueError, match="prior"):
        calibrate([0.5, 0.6], prior=(0.0, 1.0))


def test_sigmoid_is_stable_at_extremes() -> None:
    assert sigmoid(800.0) == 1.0
    assert sigmoid(-800.0) == 0.0
    assert sigmoid(0.0) == 0.5
