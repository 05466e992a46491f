"""How well the served score is a probability: calibration error and ranking per task and pooled.

Scores RAGTruth (dev part of the odd half, and the even-``source_id`` evaluation half: report
only) and HaluEval (dev fold i % 10 == 1 and evaluation fold i % 10 == 0: report only) with the
shipped build, as serving scores them (:func:`training.calibrate_tasks.score_cases`), and prints
per task and pooled over the tasks: answers, share hallucinated, expected calibration error
(10 equal-width bins) of the served probability, AUROC of the served probability, and, pooled,
the AUROC the verdict's previous score gave (each task's log-odds shifted to its own operating
point) beside the mean of the per-task AUROCs, and, pooled, the faithful answers flagged
and the recall at route thresholds 0.2–0.7. ``--chart`` draws the RAGTruth reliability
diagrams (``docs/img/calibration-reliability.png``).

    python -m bench.calibration --eval-items 80 --dev-items 40 --halueval-items 25 --chart

The probability's prior is RAGTruth's (real LLM answers); HaluEval's sets are balanced by
construction (half hallucinated), so its calibration error measures that mismatch as much as the
map. Caps take answers evenly spread over each file (``--*-items``); the numbers name them.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import charts
from training.calibrate_tasks import Scored, ece, reliability, score_cases, served, spread, uncalibrated_engine
from training.corpus import halueval, ragtruth
from training.evaluate import auroc
from training.scoring import Case, halueval_cases, ragtruth_cases
from truthlens.detector.manifest import load_manifest, resolve_model_dir
from truthlens.detector.verdict import Verdict

CHART = Path("docs/img/calibration-reliability.png")
DEV: ragtruth.Fold = "dev"
EVAL: ragtruth.Fold = "eval"
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


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
    print(f"{'task':>14} {'n':>5} {'share':>6} {'ECE':>6} {'AUROC':>6} {'prev AUROC':>10}")
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
        prev = _auroc([previous(verdict, s) for s in rows], list(y.astype(bool)))
        print(f"{task:>14} {len(rows):5} {y.mean():6.3f} {ece(p, y):6.3f} {a:6.3f} {prev:10.3f}")
    p = np.array([served(verdict, s) for s in pooled])
    y = np.array([float(s.case.hallucinated) for s in pooled])
    prev = _auroc([previous(verdict, s) for s in pooled], list(y.astype(bool)))
    both = _auroc(list(p), list(y.astype(bool)))
    print(f"{'pooled':>14} {len(pooled):5} {y.mean():6.3f} {ece(p, y):6.3f} {both:6.3f} {prev:10.3f}")
    print(f"{'per-task mean':>14} {'':5} {'':6} {'':6} {float(np.nanmean(per_task)):6.3f}")
    bins[f"pooled (ECE {ece(p, y):.3f})"] = reliability(p, y)
    # What a route's threshold now asks for: the faithful answers it flags and the recall it keeps.
    print(f"{'threshold':>14} " + " ".join(f"{t:>11.1f}" for t in THRESHOLDS))
    flagged = [float((p[y == 0] >= t).mean()) for t in THRESHOLDS]
    recall = [float((p[y == 1] >= t).mean()) for t in THRESHOLDS]
    print(f"{'faithful flagged':>14} " + " ".join(f"{v:>11.3f}" for v in flagged))
    print(f"{'recall':>14} " + " ".join(f"{v:>11.3f}" for v in recall))
    return bins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.calibration", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--dev-items", type=int, default=None, help="RAGTruth dev answers per task (default: all)")
    parser.add_argument("--eval-items", type=int, default=None,
                        help="RAGTruth evaluation answers per task (default: all)")
    parser.add_argument("--halueval-items", type=int, default=50,
                        help="HaluEval items per task and fold (two answers each); 0 skips HaluEval")
    parser.add_argument("--chart", nargs="?", const=CHART, type=Path, default=None,
                        help=f"draw the RAGTruth reliability diagrams (default path {CHART})")
    args = parser.parse_args(argv)
    if not ragtruth.available(args.ragtruth):
        parser.error(f"RAGTruth files not in {args.ragtruth}: run python -m training.corpus.ragtruth --faithjudge DIR")
    groups: dict[str, dict[str, list[Case]]] = {
        f"RAGTruth {label}": {task: spread(ragtruth_cases(task, (fold,), args.ragtruth), cap)
                              for task in ragtruth.TASKS}
        for label, fold, cap in (("dev part (odd source_id)", DEV, args.dev_items),
                                 ("evaluation half (even source_id, report only)", EVAL, args.eval_items))
    }
    if args.halueval_items:
        root = halueval.fetch(args.halueval)
        for label, fold in (("dev fold (i % 10 == 1)", "dev"), ("evaluation fold (i % 10 == 0, report only)", "eval")):
            groups[f"HaluEval {label}"] = {
                task: halueval_cases(task, (fold,), root, args.halueval_items)  # type: ignore[arg-type]
                for task in ("qa", "summarization", "dialogue")
            }
    # The log-odds come from the build (the same path as the fit); the maps and the operating
    # points from the model's manifest, read once scoring is done.
    with tempfile.TemporaryDirectory() as work:
        engine = uncalibrated_engine(args.model, Path(work))
        try:
            scored = {name: {task: score_cases(engine, cases) for task, cases in tasks.items()}
                      for name, tasks in groups.items()}
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
        caps = f"dev {args.dev_items or 'all'}, evaluation {args.eval_items or 'all'} answers per task"
        out = charts.reliability_diagram(
            panels, args.chart,
            f"Served score against the share of hallucinated answers, RAGTruth ({caps}); shipped model "
            "with its per-task probability map (python -m bench.calibration)",
        )
        print(f"\nchart -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
