"""ACR eq. 8, 17–21: counterfactual stability, conflict information and the fusion weight.

Reading of the weight: ``w`` is the weight of the INTERNAL (parametric) answer and ``1 − w``
the weight of the EXTERNAL (retrieved) one. Eq. 18 raises ``w`` with ``μ_int − μ_ext``, and the
paper's case study (§5.7, Fig. 6) has the fusion move toward the external answer as ``μ_ext``
rises and ``Δu`` falls; only this reading agrees with both. Eq. 21 as printed,
``h_t = w·h_ext + (1 − w)·h_int``, swaps the roles; we follow eq. 18 and the case study.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from truthlens.modes.acr.calibration import sigmoid

_TINY = 1e-12
DEFAULT_THETA = 0.05  # width of the uncertainty zone |I_c − I_s| ≤ θ (§3.2)


def stability(
    original_answer: str,
    perturbed_answers: Sequence[str],
    same: Callable[[str, str], bool],
) -> float:
    """Δu = 1 − S (eq. 17), S = share of perturbed answers ``same`` as the original (eq. 8).

    Raises ``ValueError`` without perturbed answers: no evidence is not stability.
    """
    if not perturbed_answers:
        raise ValueError("stability needs at least one perturbed answer")
    kept = sum(1 for answer in perturbed_answers if same(original_answer, answer))
    return 1.0 - kept / len(perturbed_answers)


def conflict_information(
    mu_int: float, sigma_int: float, mu_ext: float, sigma_ext: float
) -> tuple[float, float]:
    """Return ``(I_c, I_s)`` (eq. 20), s = sqrt(σ²_int + σ²_ext).

    I_s = (μ_ext − μ_int)² / (2s²); I_c = −log(|μ_ext − μ_int| / s). The paper prints the signed
    difference inside the log; its magnitude is what is meant (the log of a negative number
    is undefined). A zero difference would make I_c infinite, so the ratio is floored at 1e-12.
    """
    for name, value in (("sigma_int", sigma_int), ("sigma_ext", sigma_ext)):
        if not value >= 0.0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    s = max(math.sqrt(sigma_int**2 + sigma_ext**2), _TINY)
    gap = abs(mu_ext - mu_int)
    i_s = gap**2 / (2.0 * s**2)
    i_c = -math.log(max(gap / s, _TINY))
    return i_c, i_s


def in_uncertainty_zone(i_c: float, i_s: float, theta: float = DEFAULT_THETA) -> bool:
    """|I_c − I_s| ≤ θ: both sources look about equally credible (§3.2, §4.3)."""
    return abs(i_c - i_s) <= theta


def fusion_weight(mu_int: float, mu_ext: float, delta_u: float) -> float:
    """Weight of the internal answer, w = sigmoid(ω̄·(μ_int − μ_ext) + ξ·Δu) (eq. 18–19).

    ω̄ = |Δμ| / (|Δμ| + |Δu|), ξ = 1 − ω̄. When both are 0 there is no signal either way and
    ω̄ = ξ = 1/2 (w = 1/2). The argument lies in [−1, 1], so w stays in about [0.27, 0.73]:
    a soft mix, never a hard binary choice — the point of eq. 18 for near-equal confidences.
    """
    for name, value in (("mu_int", mu_int), ("mu_ext", mu_ext), ("delta_u", delta_u)):
        if not (0.0 <= value <= 1.0):
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    diff = mu_int - mu_ext
    denom = abs(diff) + abs(delta_u)
    omega_bar = abs(diff) / denom if denom > 0.0 else 0.5
    xi = 1.0 - omega_bar
    return sigmoid(omega_bar * diff + xi * delta_u)
