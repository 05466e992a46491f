"""A route's ``threshold``: a number, or derived from what a miss costs, per task.

The detector's score is P(the answer holds a hallucination), calibrated per task at that task's
prior π_t: the share of hallucinated answers among the dev answers the map was fitted on
(:mod:`truthlens.detector.calibration.probability`; the model's manifest gives each π_t). Flagging pays when
the expected cost of letting an answer through exceeds that of flagging it: with
λ = C_miss / C_false_alarm, when the posterior odds exceed 1/λ. A route whose traffic holds
hallucinations at a share π moves the score's odds by the prior ratio, so flag when

    s > τ_task = 1 / (1 + λ · (π / (1 − π)) · ((1 − π_t) / π_t)),

and, when the route gives no prior (π = π_t), when ``s > 1 / (1 + λ)``. A number is a risk on
that one scale and means the same for every task. A detector that gives no task priors (a
model without the calibrated verdict, the LLM judge) is read as calibrated on balanced classes
(π_t = 0.5), which is the rule as the proposal meant it.

The proposal (§3.1.4) writes ``1 / (1 + λ·(1−π)/π)``: the prior ratio inverted, which gives
λ = 10, π = 0.1 a threshold of 0.011 where its own table says 0.3–0.5 for medicine; docs/policy.md
compares them preset by preset. The presets are the proposal's table: λ inside its range for the
domain (:attr:`Preset.miss_cost`) at the table's π = :data:`DEFAULT_PRIOR` unless the route gives one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from truthlens.detector.calibration.probability import DEFAULT_THRESHOLD
from truthlens.detector.calibration.probability import task_priors as manifest_priors
from truthlens.detector.manifest import resolve_model_dir
from truthlens.detector.types import DetectorSettings
from truthlens.options import ConfigError, Section

DEFAULT_PRIOR = 0.1  # the share of answers with a hallucination the proposal's table assumes
BALANCED = 0.5  # π_t of a score calibrated on balanced classes (a detector without task priors)
# How a task shape is named to the client (x-truthlens-task), for check-config's lines.
TASK_NAMES = {"passages": "question", "article": "summary", "record": "record"}


@dataclass(frozen=True, slots=True)
class Preset:
    proposal_range: tuple[float, float]  # λ as the proposal's table gives it
    proposal_tau: tuple[float, float]  # τ as the proposal's table recommends it

    @property
    def miss_cost(self) -> float:
        """The λ of the proposal's range whose τ at :data:`DEFAULT_PRIOR`, on a score calibrated
        on balanced classes (the table's reading), is nearest the middle of the table's τ (the
        range's end when no λ in it reaches that τ)."""
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
                              "description": "the route's share of answers that hold a hallucination; "
                                             "absent: each task's own (a preset: 0.1)"},
                    "preset": {"enum": list(PRESETS)}}},
], "default": DEFAULT_THRESHOLD,
    "description": "a number (a probability: the risk above which an answer is flagged, the same for every "
                   "task); a preset (medical, finance, support, creative); or {miss_cost: λ, prior: π}, "
                   "τ per task"}


def tau(miss_cost: float, prior: float | None = None, task_prior: float | None = None) -> float:
    """τ = 1 / (1 + λ · odds(π) / odds(π_t)) (the module doc); π absent: π = π_t, τ = 1/(1+λ);
    π_t absent: a score calibrated on balanced classes (π_t = 0.5)."""
    if prior is None:
        return 1.0 / (1.0 + miss_cost)
    t = BALANCED if task_prior is None else task_prior
    return 1.0 / (1.0 + miss_cost * (prior / (1.0 - prior)) * ((1.0 - t) / t))


def proposal_tau(miss_cost: float, prior: float) -> float:
    """The proposal's formula as written, 1 / (1 + λ·(1−π)/π); kept to document the difference."""
    return 1.0 / (1.0 + miss_cost * (1.0 - prior) / prior)


@dataclass(frozen=True, slots=True)
class Threshold:
    """A route's rule: a number, or a miss cost λ with the route's prior π (None: each task's own)."""

    number: float | None  # a number: the τ for every task
    basis: str  # how it was chosen: "" (a number), "medical", "miss_cost=10,prior=0.1"
    miss_cost: float = 1.0
    prior: float | None = None

    def for_task(self, task_prior: float | None) -> float:
        """The τ in force for a task whose score is calibrated at ``task_prior`` (None: balanced)."""
        if self.number is not None:
            return self.number
        return round(tau(self.miss_cost, self.prior, task_prior), 4)

    def per_task(self, task_priors: Mapping[str, float] | None) -> dict[str, float]:
        """τ per task shape where it depends on the task (empty: the same τ for every task)."""
        if self.number is not None or self.prior is None or not task_priors:
            return {}
        return {shape: self.for_task(p) for shape, p in task_priors.items()}


def describe(threshold: float, per_task: Mapping[str, float]) -> str:
    """The τ in force as ``check-config`` prints it: one number, or one per task as the client
    is told the task (``question 0.29, summary 0.16, record 0.56``)."""
    if not per_task:
        return f"{threshold:g}"
    return ", ".join(f"{TASK_NAMES.get(shape, shape)} {tau:g}" for shape, tau in per_task.items())


def task_priors(detector: DetectorSettings) -> Mapping[str, float] | None:
    """The priors the detector's score is calibrated at, per task shape; None where it gives none
    (the LLM judge, a model without the learned verdict, or the verdict switched off)."""
    if detector.backend == "llm" or not detector.learned_verdict:
        return None
    try:
        priors = manifest_priors(resolve_model_dir(detector.model_dir))
    except ValueError as exc:  # the model would not load either: say so where the config names it
        raise ConfigError("detector.model_dir", f"the model's manifest: {exc}") from exc
    return None if priors is None else {str(shape): prior for shape, prior in priors.items()}


def parse_threshold(s: Section) -> Threshold:
    """The ``threshold`` key of ``s`` (absent: :data:`DEFAULT_THRESHOLD`)."""
    raw: Any = s.get("threshold", DEFAULT_THRESHOLD, schema=SCHEMA)
    key = s.key("threshold")
    if isinstance(raw, str):
        if raw not in PRESETS:
            raise ConfigError(key, f"must be a number in [0, 1], a preset ({', '.join(PRESETS)}) or "
                                   f"{{miss_cost: λ, prior: π}}; {raw!r} is no preset")
        return Threshold(None, raw, PRESETS[raw].miss_cost, DEFAULT_PRIOR)
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
        # A preset is the proposal's row, at its π; plain costs without a prior: each task's own.
        prior = costs.optional_number("prior", DEFAULT_PRIOR if preset is not None else None, lo=0.0, hi=1.0)
        if prior is not None and not 0.0 < prior < 1.0:
            raise ConfigError(costs.key("prior"), "must be above 0 and below 1 (the share of answers that hold "
                                                  "a hallucination)")
        basis = f"miss_cost={miss_cost:g}" + (f",prior={prior:g}" if prior is not None else "") \
            + (f",preset={preset}" if preset else "")
        return Threshold(None, basis, miss_cost, prior)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ConfigError(key, f"must be a number in [0, 1], a preset ({', '.join(PRESETS)}) or "
                               f"{{miss_cost: λ, prior: π}}, got {raw!r}")
    value = float(raw)
    if not math.isfinite(value):  # NaN fails every comparison: a NaN threshold would flag nothing
        raise ConfigError(key, f"must be a finite number, got {raw!r}")
    if not 0.0 <= value <= 1.0:
        raise ConfigError(key, f"must be <= 1.0, got {raw!r}" if value > 1 else f"must be >= 0.0, got {raw!r}")
    return Threshold(value, "")
