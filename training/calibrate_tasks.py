"""Fit the verdict's probability map per task (:mod:`truthlens.detector.calibration.probability`).

One command, re-run whenever the model, the fact check, fusion or the verdict changes (their
scores shift, so the map must follow); it also rewrites the figures the docs quote from it:

    python -m training.calibrate_tasks --write

1. The dev answers the verdict is fitted and chosen on (:mod:`training.verdict_data`: RAGTruth's
   dev part, odd ``source_id`` with ``(source_id // 2) % 5 == 0``, and HaluEval's dev fold,
   i % 10 == 1), scored by the model once and cached in ``training/output/verdict/`` (a
   verdict refit leaves the cache valid), run through the fact check and fusion as serving
   does and turned into the verdict's log-odds for their task shape.
2. Per task shape (passages / article / record), a logistic map ``slope · z + intercept`` is
   fitted on RAGTruth's dev answers (real LLM answers) with both classes weighing the same
   (Newton steps, a small ridge), and the task's prior is their share of hallucinated answers.
   The served score is then ``sigmoid(slope · z + intercept + logit(prior))``. HaluEval's sets
   are balanced by construction, so they take no part in the fit.
3. On every dev set (RAGTruth's three tasks, HaluEval's three), the balanced accuracy per route
   threshold: the table the routes' default (:data:`DEFAULT_THRESHOLD`) was chosen on, the
   highest threshold whose mean over the six sets is within :data:`TIED` of the best (fewer
   false alarms among ties); a warning when this build chooses another.
4. ``--write`` stores the maps, the dev figures and the trade per route threshold in the
   model's ``manifest.json`` under ``verdict.probability`` and re-renders the docs' figures
   (``python -m bench.doc_figures --write``).

The evaluation folds are never read here (``python -m bench.calibration`` reports them). The
verdict was fitted on these same dev answers, so their log-odds are in-sample for it: the
evaluation halves are where the calibration is judged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from training.corpus import halueval, ragtruth
from training.evaluate import auroc
from training.scoring import BLOCK, Case
from training.verdict import ITEMS, SUMMARIZATION_ITEMS
from training.verdict_data import HUMAN_DEV_SETS, development_sets, load_or_score, signals
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.calibration.probability import KEY, TaskProbability, to_json
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import resolve_model_dir
from truthlens.detector.prompt import SHAPES, Shape, checked
from truthlens.detector.types import DetectorSettings
from truthlens.detector.verdict import Verdict, signals_for
from truthlens.gateway.policy.thresholds import DEFAULT_THRESHOLD

RIDGE = 1e-3  # on slope and intercept: keeps Newton finite when a small set separates perfectly
BINS = 10  # equal-width bins of the reliability diagram and the expected calibration error
_IDENTITY = TaskProbability(1.0, 0.0, 0.5)  # P = sigmoid(z): the verdict's own log-odds
# The route thresholds the docs' trade table shows, and the grid the default is chosen on.
ROUTE_THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
DEFAULT_GRID = tuple(round(0.1 + 0.05 * i, 2) for i in range(13))  # 0.10 ... 0.70
# The six dev sets the default is chosen on (each weighs the same); the twins are reported.
CHOICE_SETS = tuple(f"ragtruth {t} (dev)" for t in ragtruth.TASKS) + tuple(
    f"halueval {t} (dev)" for t in ("qa", "summarization", "dialogue"))
TWINS = "halueval qa faithful twins (dev)"
HUMAN_DEV = Path("training/output/llm5")  # the mix the shipped verdict was fitted with (its manifest's command)
# Thresholds whose mean dev balanced accuracy is within this of the best count as tied (the dev
# sets hold 65-600 answers each); of those the highest is chosen: fewer faithful answers flagged.
TIED = 0.005


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


def dev_scored(
    engine: DetectorEngine, hal_root: Path, rag_root: Path, human_dev: Path | None,
    items: int = ITEMS, summarization_items: int = SUMMARIZATION_ITEMS,
) -> dict[str, list[Scored]]:
    """The verdict's dev sets (as :mod:`training.verdict` reads them), from the shared cache where
    the same model scored them before, each answer with its task shape and log-odds."""
    verdict = engine.verdict
    assert verdict is not None
    every = development_sets(hal_root, rag_root, items, summarization_items, human_dev)
    sets = {name: cases for name, cases in every.items() if name.endswith("(dev)")}
    raw = load_or_score(engine, sets, with_support=verdict.uses_support)
    return {name: [Scored(r.case, r.shape, verdict.log_odds(signals(r, engine.role_checks)) if r.probs.size else None)
                   for r in rows] for name, rows in raw.items()}


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


def balanced_accuracy(p: np.ndarray, y: np.ndarray, threshold: float) -> float:
    """The mean of recall and the share of faithful answers left clean, flagging at ``p >= threshold``."""
    flagged = p >= threshold
    return float((flagged[y == 1].mean() + (~flagged[y == 0]).mean()) / 2)


def fit(scored: Mapping[str, Sequence[Scored]]) -> dict[Shape, TaskProbability]:
    """One map per task shape, on the RAGTruth dev answers of that shape (module doc, step 2)."""
    rows = [s for name, rs in scored.items() if name.startswith("ragtruth") for s in rs if s.log_odds is not None]
    maps: dict[Shape, TaskProbability] = {}
    for shape in SHAPES:
        mine = [s for s in rows if s.shape == shape]
        z = np.array([s.log_odds for s in mine], dtype=np.float64)
        y = np.array([float(s.case.hallucinated) for s in mine])
        slope, intercept = fit_map(z, y)
        if slope <= 0:
            raise SystemExit(f"{shape}: the verdict does not rank the dev answers (slope {slope:.3f}); refit it")
        maps[shape] = TaskProbability(slope, intercept, float(y.mean()))
    return maps


def _arrays(maps: Mapping[Shape, TaskProbability], rows: Sequence[Scored]) -> tuple[np.ndarray, np.ndarray]:
    p = np.array([0.0 if s.log_odds is None else maps[s.shape](s.log_odds) for s in rows])
    return p, np.array([float(s.case.hallucinated) for s in rows])


def calibration_rows(
    maps: Mapping[Shape, TaskProbability], scored: Mapping[str, Sequence[Scored]]
) -> dict[str, dict[str, float]]:
    """Answers, AUROC and ECE of the served probability per RAGTruth dev task shape and pooled."""
    rows = [s for name, rs in scored.items() if name.startswith("ragtruth") for s in rs]
    out: dict[str, dict[str, float]] = {}
    for label, mine in [*((shape, [s for s in rows if s.shape == shape]) for shape in SHAPES), ("pooled", rows)]:
        p, y = _arrays(maps, mine)
        out[label] = {"n": len(mine), "share hallucinated": round(float(y.mean()), 4),
                      "auroc": round(auroc(list(p), list(y.astype(bool))), 4), "ece": round(ece(p, y), 4)}
    return out


def figures(maps: Mapping[Shape, TaskProbability], scored: Mapping[str, Sequence[Scored]]) -> dict[str, Any]:
    """The dev figures the docs quote: the mean balanced accuracy per candidate default, the trade
    per route threshold (faithful flagged, recall) and each set at the default."""
    arrays = {name: _arrays(maps, rows) for name, rows in scored.items()}
    choice = {f"{t:g}": round(float(np.mean([balanced_accuracy(*arrays[n], t) for n in CHOICE_SETS])), 4)
              for t in DEFAULT_GRID}
    trade: dict[str, dict[str, float]] = {}
    for t in ROUTE_THRESHOLDS:
        row = {}
        for family in ("ragtruth", "halueval"):
            parts = [arrays[n] for n in CHOICE_SETS if n.startswith(family)]
            p, y = np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])
            row[f"{family} faithful flagged"] = round(float((p[y == 0] >= t).mean()), 3)
            row[f"{family} recall"] = round(float((p[y == 1] >= t).mean()), 3)
        trade[f"{t:g}"] = row
    at_default: dict[str, dict[str, float]] = {
        n: {"balanced_accuracy": round(balanced_accuracy(*arrays[n], DEFAULT_THRESHOLD), 4),
            "auroc": round(auroc(list(arrays[n][0]), list(arrays[n][1].astype(bool))), 4)} for n in CHOICE_SETS}
    for name in HUMAN_DEV_SETS:  # reported, not chosen on (the verdict reads them when its mix is here)
        if f"{name} (dev)" in arrays:
            p, y = arrays[f"{name} (dev)"]
            at_default[f"{name} (dev)"] = {"balanced_accuracy": round(balanced_accuracy(p, y, DEFAULT_THRESHOLD), 4),
                                           "auroc": round(auroc(list(p), list(y.astype(bool))), 4)}
    if TWINS in arrays:
        at_default[TWINS] = {"false_alarms": round(float((arrays[TWINS][0] >= DEFAULT_THRESHOLD).mean()), 4)}
    return {"default_choice": choice, "route_thresholds": trade, "at_default": at_default}


def chosen(choice: Mapping[str, float]) -> float:
    """The default the dev sets choose: the highest route threshold whose mean balanced accuracy
    is within :data:`TIED` of the best."""
    best = max(choice.values())
    return max(float(t) for t, v in choice.items() if v >= best - TIED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.calibrate_tasks", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--human-dev", type=Path, default=HUMAN_DEV,
                        help="the training mix whose human-labelled dev parts are reported (the verdict's; "
                             "skipped when absent)")
    parser.add_argument("--items", type=int, default=ITEMS,
                        help="HaluEval dev QA and dialogue items (x2 answers); the default is the verdict's, "
                             "whose cache it shares")
    parser.add_argument("--summarization-items", type=int, default=SUMMARIZATION_ITEMS)
    parser.add_argument("--write", action="store_true",
                        help=f"store the maps in the manifest under {KEY} and re-render the docs' figures")
    args = parser.parse_args(argv)
    if not ragtruth.available(args.ragtruth):
        parser.error(f"RAGTruth files not in {args.ragtruth}: run python -m training.corpus.ragtruth --faithjudge DIR")
    with tempfile.TemporaryDirectory() as work:
        engine = uncalibrated_engine(args.model, Path(work))
        try:
            human = args.human_dev if args.human_dev is not None and args.human_dev.is_dir() else None
            scored = dev_scored(engine, halueval.fetch(args.halueval), args.ragtruth, human, args.items,
                                args.summarization_items)
        finally:
            asyncio.run(engine.close())
    maps = fit(scored)
    about = calibration_rows(maps, scored)
    print("RAGTruth dev part (in-sample for the map and the verdict)")
    print("task        n  share   slope  intercept  AUROC    ECE")
    for label, row in about.items():
        m = maps.get(label)  # type: ignore[call-overload]
        fitted = f"{m.slope:7.3f} {m.intercept:10.3f}" if m is not None else f"{'':7} {'':10}"
        print(f"{label:9} {row['n']:4} {row['share hallucinated']:6.3f} {fitted} {row['auroc']:6.3f} {row['ece']:6.3f}")
    dev = figures(maps, scored)
    print("\nroute threshold -> mean balanced accuracy over the six dev sets (RAGTruth QA, summary, data2txt; "
          "HaluEval QA, summarization, dialogue)")
    for t, v in dev["default_choice"].items():
        mark = "  <- default" if float(t) == DEFAULT_THRESHOLD else ""
        print(f"  {t:>5} (miss cost {1 / float(t) - 1:5.2f})  {v:.4f}{mark}")
    print("\nroute threshold -> faithful flagged / recall (dev sets)")
    for t, row in dev["route_thresholds"].items():
        print(f"  {t:>4}  " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()))
    print(f"\nat the default {DEFAULT_THRESHOLD:g}: " + "; ".join(
        f"{n} " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()) for n, row in dev["at_default"].items()))
    pick = chosen(dev["default_choice"])
    print(f"\nchosen on these dev sets: {pick:g} (the highest within {TIED} of the best mean balanced accuracy)")
    if pick != DEFAULT_THRESHOLD:
        print(f"warning: the routes' default is {DEFAULT_THRESHOLD:g}; review DEFAULT_THRESHOLD "
              "(src/truthlens/gateway/policy/thresholds.py) and the docs that quote it")
    if args.write:
        path = resolve_model_dir(args.model) / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["verdict"]["probability"] = to_json(
            maps,
            data="map: RAGTruth dev part (odd source_id, (source_id // 2) % 5 == 0), both classes weighing the "
                 "same; prior: its share of hallucinated answers per task; figures: that part and the HaluEval "
                 "dev fold (i % 10 == 1), in-sample for the map and the verdict",
            command="python -m training.calibrate_tasks --write" + (
                f" --items {args.items} --summarization-items {args.summarization_items}"
                if (args.items, args.summarization_items) != (ITEMS, SUMMARIZATION_ITEMS) else ""),
            dev=about,
            **dev,
        )
        path.write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"{KEY} -> {path}")
        from bench import doc_figures  # the docs quote the block just written

        doc_figures.main(["--write"])
        print("docs' figures re-rendered (python -m bench.doc_figures --write)")
    return 0 if all(math.isfinite(m.slope) for m in maps.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
