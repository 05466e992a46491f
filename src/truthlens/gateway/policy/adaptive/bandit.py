"""Thompson sampling over a route's modes (``mode: adaptive``, the proposal's §3.4.3).

Each arm (a mode the route lists) keeps a Beta(α, β) posterior of "the user had no complaint"
per (decision, domain), starting at Beta(1, 1). To choose, every arm draws θ from its posterior
and pays its mean measured cost; the arm with the highest ``θ − cost`` runs. A complaint
(``good: false``) adds 1 to β; praise, or silence past the feedback window, adds 1 to α.

Costs are in units of one unhappy user: ``price_per_second`` × the check's latency plus
``price_per_model_call`` × the model calls it made (its re-ask iterations). With ``memory`` N
every pick discounts the evidence of every arm of the key by 1/N (discounted Thompson
sampling): the posteriors hold about N recent outcomes, keep moving when users' satisfaction
changes, and an arm not picked for a while drifts back toward Beta(1, 1) and is tried again
(without it, an arm that lost early may never be tried after it became the best).

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


def updated(alpha: float, beta: float, good: bool) -> tuple[float, float]:
    """The posterior after one outcome."""
    return (alpha + 1.0, beta) if good else (alpha, beta + 1.0)


def keep_factor(memory: int | None) -> float:
    """What a pick leaves of every arm's evidence (the prior's 1 + 1 is never discounted)."""
    return 1.0 if memory is None else 1.0 - 1.0 / memory


def discounted(alpha: float, beta: float, keep: float) -> tuple[float, float]:
    return 1.0 + (alpha - 1.0) * keep, 1.0 + (beta - 1.0) * keep


def key_of(decision: str, domain: str | None) -> str:
    """The posterior's key: one per (decision, domain)."""
    return f"{decision}|{domain or 'none'}"


def cost(latency_s: float, model_calls: int, price_per_second: float, price_per_model_call: float) -> float:
    return latency_s * price_per_second + model_calls * price_per_model_call
