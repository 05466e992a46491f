"""A route's ``threshold``: a number, or derived from what a miss costs.

Flag an answer when the expected cost of letting it through exceeds that of flagging it. With
λ = C_miss / C_false_alarm and a score ``s`` whose odds are the detector's likelihood ratio (a
score calibrated on balanced classes), a deployment where a share π of answers hold a
hallucination has posterior odds ``s/(1−s) · π/(1−π)``; flagging pays when the posterior exceeds
``1/(1+λ)``, that is when

    s > τ = 1 / (1 + λ · π / (1 − π)).

The proposal (§3.1.4) writes ``1 / (1 + λ·(1−π)/π)``: the prior ratio inverted, which gives
λ = 10, π = 0.1 a threshold of 0.011 where its own table says 0.3–0.5 for medicine; the form
above gives 0.47 (docs/thresholds.md compares them preset by preset). The presets are the
proposal's table: λ inside its range for the domain (:attr:`Preset.miss_cost`), π =
:data:`DEFAULT_PRIOR` unless given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from truthlens.options import ConfigError, Section

DEFAULT_PRIOR = 0.1  # share of answers with a hallucination the presets assume
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True, slots=True)
class Preset:
    proposal_range: tuple[float, float]  # λ as the proposal's table gives it
    proposal_tau: tuple[float, float]  # τ as the proposal's table recommends it

    @property
    def miss_cost(self) -> float:
        """The λ of the proposal's range whose τ at :data:`DEFAULT_PRIOR` is nearest the middle
        of the table's τ (the range's end when no λ in it reaches that τ)."""
        target = sum(self.proposal_tau) / 2
        wanted = (1.0 / target - 1.0) * (1.0 - DEFAULT_PRIOR) / DEFAULT_PRIOR  # tau() solved for λ
        lo, hi = self.proposal_range
        return round(min(max(wanted, lo), hi), 2)


PRESETS: dict[str, Preset] = {
    "medical": Preset((10.0, 100.0), (0.3, 0.5)),
    "finance": Preset((5.0, 20.0), (0.4, 0.6)),
    "support": Preset((1.0, 2.0), (0.6, 0.7)),
    "creative": Preset((0.1, 0.5), (0.8, 0.9)),
}

SCHEMA = {"anyOf": [
    {"type": "number", "minimum": 0.0, "maximum": 1.0},
    {"enum": list(PRESETS)},
    {"type": "object", "additionalProperties": False, "required": ["miss_cost"],
     "properties": {"miss_cost": {"type": "number", "exclusiveMinimum": 0},
                    "prior": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                              "default": DEFAULT_PRIOR},
                    "preset": {"enum": list(PRESETS)}}},
], "default": DEFAULT_THRESHOLD,
    "description": "a number; a preset (medical, finance, support, creative); or {miss_cost: λ, prior: π}"}


@dataclass(frozen=True, slots=True)
class Threshold:
    value: float  # τ in force
    basis: str  # how it was chosen: "" (a number), "medical", "miss_cost=10,prior=0.1"


def tau(miss_cost: float, prior: float) -> float:
    """τ = 1 / (1 + λ·π/(1−π)) (see the module doc)."""
    return 1.0 / (1.0 + miss_cost * prior / (1.0 - prior))


def proposal_tau(miss_cost: float, prior: float) -> float:
    """The proposal's formula as written, 1 / (1 + λ·(1−π)/π); kept to document the difference."""
    return 1.0 / (1.0 + miss_cost * (1.0 - prior) / prior)


def parse_threshold(s: Section) -> Threshold:
    """The ``threshold`` key of ``s`` (absent: 0.5)."""
    raw: Any = s.get("threshold", DEFAULT_THRESHOLD, schema=SCHEMA)
    key = s.key("threshold")
    if isinstance(raw, str):
        if raw not in PRESETS:
            raise ConfigError(key, f"must be a number in [0, 1], a preset ({', '.join(PRESETS)}) or "
                                   f"{{miss_cost: λ, prior: π}}; {raw!r} is no preset")
        return Threshold(round(tau(PRESETS[raw].miss_cost, DEFAULT_PRIOR), 4), raw)
    if isinstance(raw, dict):
        costs = Section(raw, key)
        costs.allow("miss_cost", "prior", "preset")
        preset = costs.get("preset")
        if preset is not None and preset not in PRESETS:
            raise ConfigError(costs.key("preset"), f"unknown preset {preset!r} (expected one of {', '.join(PRESETS)})")
        if preset is None:
            costs.require("miss_cost")
        default_cost = PRESETS[preset].miss_cost if preset is not None else 1.0
        miss_cost = costs.number("miss_cost", default_cost, positive=True)
        prior = costs.number("prior", DEFAULT_PRIOR, positive=True, hi=1.0)
        if prior >= 1.0:
            raise ConfigError(costs.key("prior"), "must be below 1 (the share of answers that hold a hallucination)")
        basis = f"miss_cost={miss_cost:g},prior={prior:g}" + (f",preset={preset}" if preset else "")
        return Threshold(round(tau(miss_cost, prior), 4), basis)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ConfigError(key, f"must be a number in [0, 1], a preset ({', '.join(PRESETS)}) or "
                               f"{{miss_cost: λ, prior: π}}, got {raw!r}")
    value = float(raw)
    if not math.isfinite(value):  # NaN fails every comparison: a NaN threshold would flag nothing
        raise ConfigError(key, f"must be a finite number, got {raw!r}")
    if not 0.0 <= value <= 1.0:
        raise ConfigError(key, f"must be <= 1.0, got {raw!r}" if value > 1 else f"must be >= 0.0, got {raw!r}")
    return Threshold(value, "")
