"""Fit the verdict's probability map per task (:mod:`truthlens.detector.probability`) with the current build.

One command, re-run whenever the model, the fact check, fusion or the verdict changes (their
scores shift, so the map must follow; nothing is cached between runs):

    python -m training.calibrate_tasks --write

1. Every answer of RAGTruth's dev part (odd ``source_id``, ``(source_id // 2) % 5 == 0``; real
   LLM answers with their natural share of hallucinations) is checked the way serving checks it
   (:meth:`DetectorEngine.fused_token_scores`: the model, the fact check, fusion) and turned into
   the verdict's log-odds for its task shape.
2. Per task shape (passages / article / record: RAGTruth's QA, summary and data-to-text), a
   logistic map ``slope · z + intercept`` is fitted with both classes weighing the same (Newton
   steps, a small ridge), and the task's prior is the dev part's share of hallucinated answers.
   The served score is then ``sigmoid(slope · z + intercept + logit(prior))``.
3. ``--write`` stores the maps in the model's ``manifest.json`` under ``verdict.probability``.

The evaluation folds are never read here (``python -m bench.calibration`` reports them). The
verdict itself was fitted on the same odd half, so these log-odds are in-sample for it: the
evaluation half is where the calibration is judged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.corpus import ragtruth
from training.evaluate import auroc
from training.scoring import BLOCK, Case, ragtruth_cases
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import resolve_model_dir
from truthlens.detector.probability import KEY, TaskProbability, to_json
from truthlens.detector.prompt import SHAPES, Shape, checked
from truthlens.detector.types import DetectorSettings
from truthlens.detector.verdict import Verdict, signals_for

RIDGE = 1e-3  # on slope and intercept: keeps Newton finite when a small set separates perfectly
BINS = 10  # equal-width bins of the reliability diagram and the expected calibration error
TASK_SHAPE: dict[str, Shape] = {"qa": "passages", "summary": "article", "data2txt": "record"}
_IDENTITY = TaskProbability(1.0, 0.0, 0.5)  # P = sigmoid(z): the verdict's own log-odds


@dataclass(frozen=True, slots=True)
class Scored:
    """One answer: its task shape as serving reads it, the verdict's log-odds (None: no tokens)."""

    case: Case
    shape: Shape
    log_odds: float | None


def uncalibrated_engine(model: str | None, work: Path) -> DetectorEngine:
    """The build's engine over a copy of the model directory whose probability map is the identity
    (so a manifest whose map is missing or stale still loads: this command is what writes it)."""
    source = resolve_model_dir(model)
    raw = json.loads((source / "manifest.json").read_text())
    if "verdict" not in raw:
        raise SystemExit(f"{source}: the model has no learned verdict to calibrate (python -m training.verdict)")
    for entry in source.iterdir():
        if entry.name != "manifest.json":
            (work / entry.name).symlink_to(entry.resolve())
    raw["verdict"]["probability"] = to_json({shape: _IDENTITY for shape in SHAPES})
    (work / "manifest.json").write_text(json.dumps(raw))
    engine = create_detector(DetectorSettings(model_dir=str(work), provider="cpu"))
    assert isinstance(engine, DetectorEngine), "calibration reads in-process token scores (backend: onnx)"
    return engine


def score_cases(engine: DetectorEngine, cases: Sequence[Case]) -> list[Scored]:
    """Each answer's task shape and verdict log-odds, through serving's path (model, facts, fusion)."""
    verdict = engine.verdict
    assert verdict is not None

    async def one(case: Case) -> Scored:
        item = checked(case.item)
        (scores, findings), support = await asyncio.gather(
            engine.fused_token_scores(item), engine.support(item) if verdict.uses_support else _none()
        )
        sig = signals_for(item, scores.probs, scores.offsets, findings, support)
        # An answer without tokens is served 0.0 (nothing to check): no log-odds.
        return Scored(case, sig.shape, verdict.log_odds(sig) if scores.rows else None)

    async def run() -> list[Scored]:
        out: list[Scored] = []
        for i in range(0, len(cases), BLOCK):
            out.extend(await asyncio.gather(*(one(c) for c in cases[i : i + BLOCK])))
        return out

    return asyncio.run(run())


def spread(cases: Sequence[Case], n: int | None) -> list[Case]:
    """At most ``n`` of ``cases``, evenly spread over the list (files are ordered by source)."""
    if n is None or n >= len(cases):
        return list(cases)
    return [cases[i * len(cases) // n] for i in range(n)]


async def _none() -> None:
    return None


def served(verdict: Verdict, scored: Scored) -> float:
    """The score serving gives this answer under ``verdict``'s probability map."""
    return 0.0 if scored.log_odds is None else verdict.probability[scored.shape](scored.log_odds)


def fit_map(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of a logistic map of ``z`` with both classes weighing the same."""
    if y.min() == y.max():
        raise ValueError("a task needs both faithful and hallucinated dev answers")
    w = np.where(y == 1, 0.5 / y.sum(), 0.5 / (len(y) - y.sum())) * len(y)
    x = np.column_stack([z, np.ones_like(z)])
    beta = np.array([1.0, 0.0])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        grad = x.T @ (w * (p - y)) + RIDGE * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + RIDGE * np.eye(2)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(beta[0]), float(beta[1])


def reliability(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> list[tuple[float, float, int]]:
    """(mean predicted, observed rate, count) per non-empty equal-width bin of ``p``."""
    index = np.minimum((p * bins).astype(int), bins - 1)
    return [(float(p[index == b].mean()), float(y[index == b].mean()), int((index == b).sum()))
            for b in range(bins) if (index == b).any()]


def ece(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> float:
    """Expected calibration error: the count-weighted gap between predicted and observed per bin."""
    return sum(n * abs(mean - rate) for mean, rate, n in reliability(p, y, bins)) / len(p)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.calibrate_tasks", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--items", type=int, default=None,
                        help="at most this many dev answers per task (evenly spread)")
    parser.add_argument("--write", action="store_true", help=f"store the maps in the manifest under {KEY}")
    args = parser.parse_args(argv)
    if not ragtruth.available(args.ragtruth):
        parser.error(f"RAGTruth files not in {args.ragtruth}: run python -m training.corpus.ragtruth --faithjudge DIR")
    with tempfile.TemporaryDirectory() as work:
        engine = uncalibrated_engine(args.model, Path(work))
        try:
            scored = [s for task in ragtruth.TASKS
                      for s in score_cases(engine, spread(ragtruth_cases(task, ("dev",), args.ragtruth), args.items))]
        finally:
            asyncio.run(engine.close())
    maps: dict[Shape, TaskProbability] = {}
    about: dict[str, dict[str, float]] = {}
    print("shape      n  prior   slope  intercept  AUROC  ECE (dev, in-sample)")
    for shape in SHAPES:
        rows = [s for s in scored if s.shape == shape and s.log_odds is not None]
        z = np.array([s.log_odds for s in rows], dtype=np.float64)
        y = np.array([float(s.case.hallucinated) for s in rows])
        slope, intercept = fit_map(z, y)
        if slope <= 0:
            raise SystemExit(f"{shape}: the verdict does not rank the dev answers (slope {slope:.3f}); refit it")
        maps[shape] = TaskProbability(slope, intercept, float(y.mean()))
        p = np.array([maps[shape](v) for v in z])
        about[shape] = {"n": len(rows), "auroc": round(auroc(list(z), list(y.astype(bool))), 4),
                        "ece": round(ece(p, y), 4)}
        print(f"{shape:8} {len(rows):4} {y.mean():6.3f} {slope:7.3f} {intercept:10.3f} {about[shape]['auroc']:6.3f} "
              f"{about[shape]['ece']:6.3f}")
    rows = [s for s in scored if s.log_odds is not None]
    pooled_p = np.array([maps[s.shape](s.log_odds) for s in rows if s.log_odds is not None])
    pooled_y = np.array([float(s.case.hallucinated) for s in rows])
    about["pooled"] = {"n": len(rows), "auroc": round(auroc(list(pooled_p), list(pooled_y.astype(bool))), 4),
                       "ece": round(ece(pooled_p, pooled_y), 4)}
    print(f"pooled   {len(rows):4} {pooled_y.mean():6.3f} {'':7} {'':10} {about['pooled']['auroc']:6.3f} "
          f"{about['pooled']['ece']:6.3f}")
    if args.write:
        path = resolve_model_dir(args.model) / "manifest.json"
        manifest = json.loads(path.read_text())
        command = "python -m training.calibrate_tasks --write" + (f" --items {args.items}" if args.items else "")
        manifest["verdict"]["probability"] = to_json(
            maps,
            data="RAGTruth dev part (odd source_id, (source_id // 2) % 5 == 0); prior: its share of "
                 "hallucinated answers per task; slope and intercept with both classes weighing the same",
            command=command,
            dev=about,
        )
        path.write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"{KEY} -> {path}")
    return 0 if all(math.isfinite(m.slope) for m in maps.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
