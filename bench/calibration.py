"""How well the served score is a probability: calibration error and ranking per task and pooled.

The dev sets are the verdict's (:func:`training.calibrate_tasks.dev_scored`: RAGTruth's dev
part, HaluEval's dev fold; cached); the evaluation halves (RAGTruth even ``source_id``,
HaluEval i % 10 == 0: report only) are scored by the shipped build as serving scores them
(:func:`training.calibrate_tasks.score_cases`) and cached in ``training/output/calibration/``
by the model and the verdict's weights, so a refitted probability map is reported without
another model pass. Per task and pooled over the tasks: answers, share hallucinated, expected
calibration error (10 equal-width bins) of the served probability, its AUROC and balanced
accuracy at the routes' default threshold, beside the verdict's previous score (each task's
log-odds at its own operating point, flagged at 0.5: main's served score before the map);
pooled, the mean of the per-task AUROCs and the faithful answers flagged and the recall per
route threshold. ``--chart`` draws the RAGTruth reliability diagrams
(``docs/img/calibration-reliability.png``).

    python -m bench.calibration --eval-items 100 --halueval-items 25 --chart

HaluEval's sets are balanced by construction (half hallucinated), so its calibration error
measures that mismatch as much as the map. Caps take answers evenly spread over each file
(``--*-items``); the numbers name them.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import pickle
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import charts
from training.calibrate_tasks import (
    Scored,
    balanced_accuracy,
    dev_scored,
    ece,
    reliability,
    score_cases,
    served,
    spread,
    uncalibrated_engine,
)
from training.corpus import halueval, ragtruth
from training.evaluate import auroc
from training.scoring import Case, halueval_cases, ragtruth_cases
from training.verdict import ITEMS, SUMMARIZATION_ITEMS
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import load_manifest, resolve_model_dir
from truthlens.detector.verdict import Verdict
from truthlens.gateway.policy.thresholds import DEFAULT_THRESHOLD

CHART = Path("docs/img/calibration-reliability.png")
CACHE = Path("training/output/calibration")
EVAL: ragtruth.Fold = "eval"
THRESHOLDS = (0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7)


def previous(verdict: Verdict, s: Scored) -> float:
    """The score the verdict served before the map: its log-odds shifted to the task's operating point."""
    if s.log_odds is None:
        return 0.0
    z = s.log_odds - verdict.models[s.shape].shift
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def _auroc(p: Sequence[float], y: Sequence[bool]) -> float:
    return auroc(p, y) if 0 < sum(y) < len(y) else math.nan


def table(name: str, tasks: dict[str, list[Scored]], verdict: Verdict) -> dict[str, list[tuple[float, float, int]]]:
    """Print one group's rows; return its reliability bins per task and pooled (for the chart)."""
    print(f"\n{name}")
    print(f"{'task':>14} {'n':>5} {'share':>6} {'ECE':>6} {'AUROC':>6} {'prev AUROC':>10} "
          f"{f'BA@{DEFAULT_THRESHOLD:g}':>8} {'prev BA':>8}")
    bins: dict[str, list[tuple[float, float, int]]] = {}
    per_task: list[float] = []
    pooled: list[Scored] = []
    for task, rows in tasks.items():
        p = np.array([served(verdict, s) for s in rows])
        y = np.array([float(s.case.hallucinated) for s in rows])
        a = _auroc(list(p), list(y.astype(bool)))
        per_task.append(a)
        pooled.extend(rows)
        bins[f"{task} (ECE {ece(p, y):.3f})"] = reliability(p, y)
        before = np.array([previous(verdict, s) for s in rows])
        prev = _auroc(list(before), list(y.astype(bool)))
        print(f"{task:>14} {len(rows):5} {y.mean():6.3f} {ece(p, y):6.3f} {a:6.3f} {prev:10.3f} "
              f"{balanced_accuracy(p, y, DEFAULT_THRESHOLD):8.3f} {balanced_accuracy(before, y, 0.5):8.3f}")
    p = np.array([served(verdict, s) for s in pooled])
    y = np.array([float(s.case.hallucinated) for s in pooled])
    prev = _auroc([previous(verdict, s) for s in pooled], list(y.astype(bool)))
    both = _auroc(list(p), list(y.astype(bool)))
    print(f"{'pooled':>14} {len(pooled):5} {y.mean():6.3f} {ece(p, y):6.3f} {both:6.3f} {prev:10.3f}")
    print(f"{'per-task mean':>14} {'':5} {'':6} {'':6} {float(np.nanmean(per_task)):6.3f}")
    bins[f"pooled (ECE {ece(p, y):.3f})"] = reliability(p, y)
    # What a route's threshold now asks for: the faithful answers it flags and the recall it keeps.
    print(f"{'threshold':>14} " + " ".join(f"{t:>11g}" for t in THRESHOLDS))
    flagged = [float((p[y == 0] >= t).mean()) for t in THRESHOLDS]
    recall = [float((p[y == 1] >= t).mean()) for t in THRESHOLDS]
    print(f"{'faithful flagged':>14} " + " ".join(f"{v:>11.3f}" for v in flagged))
    print(f"{'recall':>14} " + " ".join(f"{v:>11.3f}" for v in recall))
    return bins


def _cached(engine: DetectorEngine, verdict: Verdict, name: str, cases: list[Case]) -> list[Scored]:
    """``cases`` scored (log-odds), from :data:`CACHE` where this model and verdict scored them before."""
    graph = hashlib.sha1(engine.manifest.model_path.read_bytes()).hexdigest()[:16]  # every checkout alike
    weights = json.dumps({s: m.to_json() for s, m in verdict.models.items()}, sort_keys=True)
    digest = hashlib.sha1(f"{graph}:{weights}:{len(cases)}".encode())
    for c in cases[:5]:
        digest.update(c.item.answer.encode())
    path = CACHE / f"{name.replace(' ', '_')}-{digest.hexdigest()[:10]}.pkl"
    if path.exists():
        return list(pickle.loads(path.read_bytes()))
    scored = score_cases(engine, cases)
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(scored))
    print(f"scored {name}: {len(cases)} answers -> {path}", flush=True)
    return scored


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.calibration", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--eval-items", type=int, default=None,
                        help="RAGTruth evaluation answers per task (default: all)")
    parser.add_argument("--halueval-items", type=int, default=25,
                        help="HaluEval evaluation items per task (two answers each); 0 skips them")
    parser.add_argument("--no-dev", action="store_true", help="report the evaluation halves only")
    parser.add_argument("--items", type=int, default=ITEMS,
                        help="HaluEval dev QA and dialogue items (the default is the verdict's, whose cache it shares)")
    parser.add_argument("--summarization-items", type=int, default=SUMMARIZATION_ITEMS)
    parser.add_argument("--chart", nargs="?", const=CHART, type=Path, default=None,
                        help=f"draw the RAGTruth reliability diagrams (default path {CHART})")
    args = parser.parse_args(argv)
    if not ragtruth.available(args.ragtruth):
        parser.error(f"RAGTruth files not in {args.ragtruth}: run python -m training.corpus.ragtruth --faithjudge DIR")
    hal_root = halueval.fetch(args.halueval)
    evaluation: dict[str, dict[str, list[Case]]] = {
        "RAGTruth evaluation half (even source_id, report only)": {
            task: spread(ragtruth_cases(task, (EVAL,), args.ragtruth), args.eval_items) for task in ragtruth.TASKS}}
    if args.halueval_items:
        evaluation["HaluEval evaluation fold (i % 10 == 0, report only)"] = {
            task: halueval_cases(task, ("eval",), hal_root, args.halueval_items)
            for task in ("qa", "summarization", "dialogue")}
    # The log-odds come from the build (the same path as the fit); the maps from the model's
    # manifest, read once scoring is done.
    scored: dict[str, dict[str, list[Scored]]] = {}
    with tempfile.TemporaryDirectory() as work:
        engine = uncalibrated_engine(args.model, Path(work))
        try:
            assert engine.verdict is not None
            if not args.no_dev:
                dev = dev_scored(engine, hal_root, args.ragtruth, None, args.items, args.summarization_items)
                scored["RAGTruth dev part (odd source_id)"] = {t: dev[f"ragtruth {t} (dev)"] for t in ragtruth.TASKS}
                scored["HaluEval dev fold (i % 10 == 1)"] = {
                    t: dev[f"halueval {t} (dev)"] for t in ("qa", "summarization", "dialogue")}
            for name, tasks in evaluation.items():
                scored[name] = {task: _cached(engine, engine.verdict, f"{name.split()[0]} {task} eval", cases)
                                for task, cases in tasks.items()}
        finally:
            asyncio.run(engine.close())
    verdict = load_manifest(resolve_model_dir(args.model)).verdict
    assert verdict is not None
    panels = {}
    for name, tasks_scored in scored.items():
        bins = table(name, tasks_scored, verdict)
        if name.startswith("RAGTruth"):
            panels[name] = bins
    if args.chart:
        caps = f"dev part: all, evaluation half: {args.eval_items or 'all'} answers per task"
        out = charts.reliability_diagram(
            panels, args.chart,
            f"Served score against the share of hallucinated answers, RAGTruth ({caps}); shipped model "
            "with its per-task probability map (python -m bench.calibration)",
        )
        print(f"\nchart -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
