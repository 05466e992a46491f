"""The verdict's score as a probability: one monotone map per task shape, stored in the manifest.

The verdict (:mod:`truthlens.detector.verdict`) fits one logistic model per task shape, each on
its own mix of data and with its own operating point, so its raw output means different odds on
a summary and on a record. This map puts every task on one scale, P(the answer holds a
hallucination), without changing how answers rank within a task:

    P = sigmoid(slope · z + intercept + logit(prior))

where ``z`` is the task's verdict log-odds, ``slope`` (> 0) and ``intercept`` are fitted on the
development parts with both classes weighing the same (so ``slope · z + intercept`` estimates the
log likelihood ratio), and ``prior`` is the task's share of hallucinated answers on the
development part (real LLM answers: RAGTruth's odd half). A positive slope makes the map
strictly increasing, and a sigmoid keeps it in [0, 1]. ``python -m training.calibrate_tasks
--write`` fits it with the current build and rewrites the manifest's ``verdict.probability``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from truthlens.detector.prompt import SHAPES, Shape

# The routes' default threshold on this score: a risk (a miss cost of 7/3 against a false alarm,
# τ = 1/(1+7/3)), chosen on the dev parts by python -m training.calibrate_tasks: the highest
# threshold within 0.005 of the best mean balanced accuracy over RAGTruth's three dev tasks and
# HaluEval's three dev sets (0.711 at 0.3, best 0.713 at 0.25, 0.684 at 0.5; docs/policy.md).
# Here, not in the gateway's policy, so that `truthlens detect` and the benches judge as routes do.
DEFAULT_THRESHOLD = 0.3

KEY = "verdict.probability"


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def logit(p: float) -> float:
    return math.log(p / (1.0 - p))


@dataclass(frozen=True, slots=True)
class TaskProbability:
    """One task shape's map from the verdict's log-odds to P(hallucinated)."""

    slope: float
    intercept: float
    prior: float

    def __call__(self, log_odds: float) -> float:
        return sigmoid(self.slope * log_odds + self.intercept + logit(self.prior))

    def to_json(self) -> dict[str, float]:
        return {"slope": round(self.slope, 6), "intercept": round(self.intercept, 6), "prior": round(self.prior, 6)}

    @staticmethod
    def from_json(raw: Any) -> TaskProbability:
        """Parse one shape's entry; raises ``ValueError`` naming the bad field."""
        if not isinstance(raw, dict):
            raise ValueError("must be an object with slope, intercept and prior")
        values = {}
        for key in ("slope", "intercept", "prior"):
            value = raw.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{key!r} must be a finite number")
            values[key] = float(value)
        # A slope <= 0 would reverse (or flatten) the verdict's ranking within the task.
        if values["slope"] <= 0:
            raise ValueError("'slope' must be positive (the map keeps the verdict's ranking)")
        if not 0.0 < values["prior"] < 1.0:
            raise ValueError("'prior' must be in (0, 1)")
        return TaskProbability(values["slope"], values["intercept"], values["prior"])


def parse(raw: Any) -> dict[Shape, TaskProbability]:
    """The manifest's ``verdict.probability`` block: ``{"tasks": {shape: {...}}, ...}``; raises
    ``ValueError`` whose message starts with the key at fault."""
    if raw is None:
        raise ValueError(f"{KEY!r} is missing: fit it with python -m training.calibrate_tasks --write")
    tasks = raw.get("tasks") if isinstance(raw, dict) else None
    if not isinstance(tasks, dict) or set(tasks) != set(SHAPES):
        raise ValueError(f"'{KEY}.tasks' must give one map per task shape ({', '.join(SHAPES)})")
    parsed: dict[Shape, TaskProbability] = {}
    for shape in SHAPES:
        try:
            parsed[shape] = TaskProbability.from_json(tasks[shape])
        except ValueError as exc:
            raise ValueError(f"'{KEY}.tasks.{shape}': {exc}") from exc
    return parsed


def to_json(maps: Mapping[Shape, TaskProbability], **about: Any) -> dict[str, Any]:
    """The block as the manifest stores it (``about``: how it was fitted, for the reader)."""
    return {"tasks": {shape: maps[shape].to_json() for shape in SHAPES}, **about}


def task_priors(model_dir: Path) -> dict[Shape, float] | None:
    """Each task shape's prior π_t as the model's manifest gives it (what the policy's cost rule
    reads: ``truthlens.gateway.policy.thresholds``); None when the model has no learned verdict
    (its score is the span rule's, not calibrated per task) or no readable manifest (its load
    says why). A verdict with a missing or bad map raises ``ValueError`` naming the key."""
    try:
        raw = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    verdict = raw.get("verdict") if isinstance(raw, dict) else None
    if not isinstance(verdict, dict):
        return None
    return {shape: task.prior for shape, task in parse(verdict.get("probability")).items()}
