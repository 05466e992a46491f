"""Choose a model's default token threshold on tuning data, and write it into its manifest.

Tuning data only: the HaluEval **dev** fold (line index i % 10 == 1; QA, summarization,
dialogue, right and hallucinated answer of each item) and the synthetic held-out split. The
evaluation fold (i % 10 == 0) is never read here; :mod:`bench.detector_quality` reports it.

Every answer is scored once the way serving scores it (model probabilities, grounded chunk
aggregation, fused with the evidence checks), then each candidate threshold is applied to
those probabilities, so the sweep costs one pass. The chosen threshold maximises the mean
accuracy over the four sets (each is balanced, so accuracy is balanced accuracy), among the
thresholds below the smallest evidence-check weight (so one unsupported number or name still
flags an answer on its own, :mod:`truthlens.detector.fusion`); thresholds within
:data:`TIE` of the best count as tied and the lowest wins, since a missed hallucination costs a
user more than a needless warning. The table also shows the false-alarm rate on full-sentence
faithful QA answers (HaluEval right answers substituted into the hallucinated sentence), the
length shortcut the training data guards against.

    python -m training.calibrate --model src/truthlens/detector/default_model --write
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.corpus import halueval
from training.corpus.splits import generate
from training.evaluate import prf
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.factory import create_detector
from truthlens.detector.fusion import REASON_WEIGHTS
from truthlens.detector.manifest import resolve_model_dir
from truthlens.detector.spans import SpanRules, score_answer
from truthlens.detector.types import DetectionInput, DetectorSettings

GRID = tuple(round(0.30 + 0.05 * i, 2) for i in range(14))  # 0.30 … 0.95
TIE = 0.005  # mean accuracy differences smaller than this are noise at these set sizes


@dataclass(frozen=True, slots=True)
class Scored:
    answer: str
    probs: np.ndarray
    offsets: np.ndarray
    hallucinated: bool


def tuning_sets(
    root: Path, items: int, summarization_items: int, heldout: int
) -> dict[str, list[tuple[DetectionInput, bool]]]:
    sets: dict[str, list[tuple[DetectionInput, bool]]] = {}
    for task, n in (("qa", items), ("summarization", summarization_items), ("dialogue", items)):
        pairs = list(halueval.eval_pairs(task, ("dev",), root))[: n * 2]  # type: ignore[arg-type]
        sets[f"{task} (dev)"] = [(DetectionInput(ctx, q, a), h) for ctx, q, a, h in pairs]
    sets["synthetic held-out"] = [
        (DetectionInput(ex.context, ex.question, ex.answer), ex.hallucinated)
        for ex in generate("heldout", heldout, seed=13, word_budget=200)
    ]
    twins = []
    for _, row in halueval.items("qa", ("dev",), root):
        twin = halueval.faithful_twin(
            row["hallucinated_answer"], row["right_answer"], (row["knowledge"], row["question"])
        )
        if twin is not None:
            twins.append((DetectionInput((row["knowledge"],), row["question"], twin), False))
        if len(twins) >= items:
            break
    sets["qa faithful twins (dev)"] = twins
    return sets


async def score_all(engine: DetectorEngine, cases: Sequence[tuple[DetectionInput, bool]]) -> list[Scored]:
    async def one(item: DetectionInput, hallucinated: bool) -> Scored:
        scores, _ = await engine.fused_token_scores(item)
        return Scored(item.answer, scores.probs, scores.offsets, hallucinated)

    out: list[Scored] = []
    for i in range(0, len(cases), 16):
        out.extend(await asyncio.gather(*(one(item, h) for item, h in cases[i : i + 16])))
    return out


def rates(scored: Sequence[Scored], threshold: float, route_threshold: float) -> dict[str, float]:
    rules = SpanRules(token_threshold=threshold, aggregation="noisy_or")
    flagged = [
        score_answer(s.probs, s.offsets, s.answer, rules)[0] >= route_threshold and len(s.probs) > 0 for s in scored
    ]
    tp = sum(f and s.hallucinated for f, s in zip(flagged, scored, strict=True))
    fp = sum(f and not s.hallucinated for f, s in zip(flagged, scored, strict=True))
    positives = sum(s.hallucinated for s in scored)
    negatives = len(scored) - positives
    precision, recall, _ = prf(tp, fp, positives - tp)
    return {
        "accuracy": sum(f == s.hallucinated for f, s in zip(flagged, scored, strict=True)) / len(scored),
        "precision": precision,
        "recall": recall,
        "false_alarms": fp / negatives if negatives else 0.0,
    }


def sweep(
    scored: dict[str, list[Scored]], route_threshold: float, *, below: float = 1.0
) -> tuple[float, dict[float, dict[str, dict[str, float]]]]:
    """The chosen threshold (candidates under ``below``) and every candidate's rates per set."""
    table = {t: {name: rates(s, t, route_threshold) for name, s in scored.items()} for t in GRID}
    balanced = [name for name in scored if "twins" not in name]

    def objective(t: float) -> float:
        return float(np.mean([table[t][name]["accuracy"] for name in balanced]))

    candidates = [t for t in GRID if t < below]
    best = max(objective(t) for t in candidates)
    return min(t for t in candidates if objective(t) >= best - TIE), table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.calibrate", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--items", type=int, default=300, help="HaluEval dev QA and dialogue items (x2 answers)")
    parser.add_argument("--summarization-items", type=int, default=150)
    parser.add_argument("--heldout", type=int, default=800, help="synthetic held-out examples")
    parser.add_argument("--route-threshold", type=float, default=0.5, help="response-score threshold of the routes")
    parser.add_argument("--no-evidence-checks", action="store_true")
    parser.add_argument("--write", action="store_true", help="record the chosen threshold in the model's manifest.json")
    args = parser.parse_args(argv)

    root = halueval.fetch(args.halueval)
    sets = tuning_sets(root, args.items, args.summarization_items, args.heldout)
    engine = create_detector(
        DetectorSettings(model_dir=args.model, provider="cpu", evidence_checks=not args.no_evidence_checks)
    )
    assert isinstance(engine, DetectorEngine), "calibration scores tokens in process (backend: onnx)"

    async def run() -> dict[str, list[Scored]]:
        try:
            return {name: await score_all(engine, cases) for name, cases in sets.items()}
        finally:
            await engine.close()

    scored = asyncio.run(run())
    below = min(REASON_WEIGHTS.values()) if not args.no_evidence_checks else 1.0
    best, table = sweep(scored, args.route_threshold, below=below)
    names = list(scored)
    print("answers: " + ", ".join(f"{n} {len(scored[n])}" for n in names) + f"; route threshold {args.route_threshold}")
    print(
        "threshold  " + "  ".join(f"{n + ' acc/P/R':>34}" for n in names[:-1]) + f"  {names[-1] + ' false alarms':>34}"
    )
    for t in GRID:
        cells = [
            f"{r['accuracy']:.3f}/{r['precision']:.3f}/{r['recall']:.3f}" for r in (table[t][n] for n in names[:-1])
        ]
        mark = "  <- chosen" if t == best else ""
        print(
            f"{t:>9.2f}  "
            + "  ".join(f"{c:>34}" for c in cells)
            + f"  {table[t][names[-1]]['false_alarms']:>34.3f}{mark}"
        )
    if args.write:
        path = resolve_model_dir(args.model) / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["calibration"] = {
            "token_threshold": best,
            "route_threshold": args.route_threshold,
            "objective": (
                f"mean accuracy over the balanced tuning sets, thresholds below {below}, "
                f"lowest within {TIE} of the best"
            ),
            "data": "HaluEval dev fold (i % 10 == 1) QA/summarization/dialogue + synthetic held-out",
            "command": "python -m training.calibrate --write",
            "at_threshold": {n: {k: round(v, 4) for k, v in table[best][n].items()} for n in names},
        }
        path.write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"token_threshold {best} -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
