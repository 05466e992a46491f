"""ACR eq. 8, 17–20: stability, conflict information, weight. Pure math: nothing scripted."""

from __future__ import annotations

import itertools
import math

import pytest

from truthlens.modes.acr import (
    conflict_information,
    fusion_weight,
    in_uncertainty_zone,
    stability,
)


def test_paper_case_near_equal_confidences_give_a_soft_weight() -> None:
    # §4.2.2: μ_ext = 0.51, μ_int = 0.49 must not force a hard choice of one source.
    for delta_u in (0.0, 0.1, 0.5, 1.0):
        w = fusion_weight(0.49, 0.51, delta_u)
        assert 0.25 < w < 0.75
    # With a stable answer (Δu = 0) the small gap decides alone and only slightly.
    assert fusion_weight(0.49, 0.51, 0.0) == pytest.approx(1 / (1 + math.exp(0.02)))
    assert fusion_weight(0.49, 0.51, 0.0) < 0.5


def test_weight_by_hand() -> None:
    mu_int, mu_ext, du = 0.8, 0.5, 0.2
    omega = 0.3 / (0.3 + 0.2)
    xi = 1 - omega
    assert fusion_weight(mu_int, mu_ext, du) == pytest.approx(
        1 / (1 + math.exp(-(omega * 0.3 + xi * 0.2))))


def test_case_study_direction_moves_toward_external() -> None:
    # §5.7, Fig. 6: as μ_ext rises and Δu falls, the fusion moves toward the external answer;
    # w is the INTERNAL weight, so it must fall.
    steps = [(0.40, 0.6), (0.55, 0.4), (0.70, 0.2), (0.85, 0.05)]
    weights = [fusion_weight(0.6, mu_ext, du) for mu_ext, du in steps]
    assert all(a > b for a, b in itertools.pairwise(weights))
    assert weights[-1] < 0.5 < weights[0]


def test_higher_internal_confidence_raises_internal_weight() -> None:
    assert fusion_weight(0.9, 0.3, 0.1) > fusion_weight(0.5, 0.3, 0.1) > 0.5


def test_zero_over_zero_is_guarded() -> None:
    assert fusion_weight(0.6, 0.6, 0.0) == 0.5


def test_weight_is_bounded_soft() -> None:
    lo = fusion_weight(0.0, 1.0, 0.0)
    hi = fusion_weight(1.0, 0.0, 1.0)
    assert lo == pytest.approx(1 / (1 + math.e))
    assert hi == pytest.approx(1 / (1 + math.exp(-1.0)))  # ω̄ = ξ = 1/2: 0.5·1 + 0.5·1
    with pytest.raises(ValueError, match="delta_u"):
        fusion_weight(0.5, 0.5, 1.5)
    with pytest.raises(ValueError, match="mu_int"):
        fusion_weight(-0.1, 0.5, 0.1)


def test_conflict_information_by_hand() -> None:
    i_c, i_s = conflict_information(0.4, 0.1, 0.7, 0.2)
    s = math.sqrt(0.1**2 + 0.2**2)
    assert i_s == pytest.approx(0.3**2 / (2 * s**2))
    assert i_c == pytest.approx(-math.log(0.3 / s))


def test_conflict_information_is_symmetric_in_direction() -> None:
    assert conflict_information(0.3, 0.1, 0.6, 0.1) == pytest.approx(
        conflict_information(0.6, 0.1, 0.3, 0.1))


def test_equal_means_do_not_take_log_of_zero() -> None:
    i_c, i_s = conflict_information(0.5, 0.1, 0.5, 0.1)
    assert i_s == 0.0
    assert math.isfinite(i_c) and i_c > 20


def test_zero_sigmas_are_guarded() -> None:
    i_c, i_s = conflict_information(0.5, 0.0, 0.6, 0.0)
    assert math.isfinite(i_c) and math.isfinite(i_s)
    with pytest.raises(ValueError, match="sigma_int"):
        conflict_information(0.5, -0.1, 0.6, 0.1)


def test_uncertainty_zone() -> None:
    # -log r = r²/2 at r ≈ 0.7531: a gap of about 0.75 s puts I_c ≈ I_s.
    s = math.sqrt(2) * 0.1
    i_c, i_s = conflict_information(0.5, 0.1, 0.5 + 0.7531 * s, 0.1)
    assert in_uncertainty_zone(i_c, i_s)
    far_c, far_s = conflict_information(0.5, 0.1, 0.9, 0.1)
    assert not in_uncertainty_zone(far_c, far_s)
    assert in_uncertainty_zone(1.0, 1.04, theta=0.05)
    assert not in_uncertainty_zone(1.0, 1.06, theta=0.05)


def same(a: str, b: str) -> bool:
    return a == b


def test_stability_share() -> None:
    assert stability("x", ["x", "x", "y", "z"], same) == pytest.approx(0.5)
    assert stability("x", ["x", "x"], same) == 0.0
    assert stability("x", ["y"], same) == 1.0
    with pytest.raises(ValueError, match="at least one"):
        stability("x", [], same)
