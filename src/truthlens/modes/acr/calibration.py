"""ACR eq. 10–15: sequence confidences → calibrated confidence c = [μ, σ].

The paper (§4.1.3) maps the M sampled confidences p̂ to log-odds, treats them as draws of a
Normal with a Gamma prior on the precision (weakly informative (ω, ξ) = (1, 1)), and maps the
posterior back to probability space. Small samples therefore get a wide σ instead of the
falsely tight spread a raw sample variance would report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# Probabilities are clipped into [EPS, 1 - EPS] so a sample of exactly 0 or 1 (an API that
# rounds log-probs to 0.0 does this) stays finite in log-odds instead of dominating the mean.
EPS = 1e-6


def logit(p: float) -> float:
    p = min(max(p, EPS), 1.0 - EPS)
    return math.log(p / (1.0 - p))


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def calibrate(
    confidences: Sequence[float], prior: tuple[float, float] = (1.0, 1.0)
) -> tuple[float, float]:
    """Return ``(μ, σ)`` for M ≥ 2 sampled confidences in [0, 1].

    Eq. 11 (on log-odds): ℓ̄ and σ²_ℓ with the M − 1 denominator;
    eq. 13: τ̂ = (ω + M/2) / (ξ + M·σ²_ℓ/2) — the posterior mean of the precision, reading the
    printed eq. 13 with the numerator bracketed as the Normal-Gamma update requires;
    eq. 14: Var[ℓ] = 1 / ((M + 1)·τ̂); eq. 15: μ = sigmoid(ℓ̄), σ = sqrt(μ(1 − μ)·Var[ℓ])
    (the delta method back to probability space).
    """
    omega, xi = prior
    if omega <= 0 or xi <= 0:
        raise ValueError(f"prior (ω, ξ) must be positive, got {prior}")
    values = [float(p) for p in confidences]
    m = len(values)
    if m < 2:
        raise ValueError(f"calibration needs at least 2 confidence samples, got {m}")
    for i, p in enumerate(values):
        if not (0.0 <= p <= 1.0):  # also rejects NaN
            raise ValueError(f"confidences[{i}] = {p} is not a probability in [0, 1]")
    logits = [logit(p) for p in values]
    mean = sum(logits) / m
    variance = sum((x - mean) ** 2 for x in logits) / (m - 1)
    tau = (omega + m / 2.0) / (xi + m * variance / 2.0)
    var_logit = 1.0 / ((m + 1) * tau)
    mu = sigmoid(mean)
    sigma = math.sqrt(mu * (1.0 - mu) * var_logit)
    return mu, sigma
