"""Thompson sampling over a route's modes (``mode: adaptive``, the proposal's §3.4.3).

Each arm (a mode the route lists) keeps a Beta(α, β) posterior of "the user had no complaint"
per (decision, domain), starting at Beta(1, 1). To choose, every arm draws θ from its posterior
and pays its mean measured cost; the arm with the highest ``θ − cost`` runs. A complaint
(``good: false``) adds 1 to β; praise, or silence past the feedback window, adds 1 to α.

Costs are in units of one unhappy user: ``price_per_second`` × the check's latency plus
``price_per_model_call`` × the model calls it made (its re-ask iterations). With ``memory`` N
an arm's evidence is capped at N outcomes (older ones are scaled down), so a posterior keeps
moving when users' satisfaction changes instead of freezing after a million requests.

Pure: the state lives in a store (:mod:`truthlens.gateway.policy.adaptive.store`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ArmStats:
    alpha: float = 1.0
    beta: float = 1.0
    picks: int = 0
    cost_sum: float = 0.0
    cost_n: int = 0

    @property
    def mean(self) -> float:
        """The posterior mean of the arm's success."""
        return self.alpha / (self.alpha + self.beta)

    @property
    def mean_cost(self) -> float:
        return self.cost_sum / self.cost_n if self.cost_n else 0.0


def choose(stats: Mapping[str, ArmStats], arms: Sequence[str], rng: random.Random) -> str:
    """The arm whose posterior draw, less its mean cost, is highest (ties: the first listed)."""
    best, best_value = arms[0], float("-inf")
    for arm in arms:
        s = stats.get(arm, ArmStats())
        value = rng.betavariate(s.alpha, s.beta) - s.mean_cost
        if value > best_value:
            best, best_value = arm, value
    return best


def updated(alpha: float, beta: float, good: bool, memory: int | None) -> tuple[float, float]:
    """The posterior after one outcome; with ``memory``, evidence beyond it is scaled down first
    (the prior's 1 + 1 is never scaled)."""
    if memory is not None:
        evidence = alpha + beta - 2.0
        if evidence >= memory:
            keep = (memory - 1) / evidence
            alpha, beta = 1.0 + (alpha - 1.0) * keep, 1.0 + (beta - 1.0) * keep
    return (alpha + 1.0, beta) if good else (alpha, beta + 1.0)


def key_of(decision: str, domain: str | None) -> str:
    """The posterior's key: one per (decision, domain)."""
    return f"{decision}|{domain or 'none'}"


def cost(latency_s: float, model_calls: int, price_per_second: float, price_per_model_call: float) -> float:
    return latency_s * price_per_second + model_calls * price_per_model_call
