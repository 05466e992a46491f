"""Long inputs, side by side: ``chunk_aggregation`` max vs grounded (and its fallback).

Inputs whose context does not fit one model window beside the answer, so the aggregation
decides the verdict:

- HaluEval summarization (RUCAIBox 2023, MIT), **dev fold** (line index i % 10 == 1; the
  evaluation fold is not read): news articles of 500–900 tokens against the 512-token model,
  each item's right and hallucinated summary → share of faithful summaries called clean and of
  hallucinated ones called detected, accuracy, and the AUC of the response score;
- the long-context pair (:mod:`training.corpus.long_context`, ~20k tokens of dev-fold news
  around one fact passage): faithful answer clean? wrong year flagged, on the year?

Model only (``evidence_checks`` off) unless ``--evidence-checks``: the aggregation is what is
compared. Also prints model rows per check and seconds.

    python -m bench.chunk_aggregation [--items 60] [--model DIR] [--evidence-checks] [--only max grounded]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from training.corpus import halueval, long_context
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.relevance import LexicalRelevance
from truthlens.detector.types import ChunkAggregation, DetectionInput, DetectorSettings

BLOCK = 16


async def evaluate(
    name: str, settings: DetectorSettings, items: list[tuple[DetectionInput, bool]],
    pair: long_context.LongContextPair, *, lexical: bool = False,
) -> str:
    detector = create_detector(settings)
    assert isinstance(detector, DetectorEngine)
    if lexical:  # what a deployment without the embedder gets
        detector.relevance = LexicalRelevance()
    started = time.perf_counter()
    results = []
    try:
        for i in range(0, len(items), BLOCK):
            block = [item for item, _ in items[i : i + BLOCK]]
            results.extend(await detector.detect_many(block, threshold=0.5))
        faithful, wrong = await detector.detect_many(
            [
                DetectionInput(pair.context, pair.question, pair.faithful),
                DetectionInput(pair.context, pair.question, pair.wrong),
            ],
            threshold=0.5,
        )
    finally:
        await detector.close()
    seconds = time.perf_counter() - started
    right = [r for r, (_, bad) in zip(results, items, strict=True) if not bad]
    bad = [r for r, (_, h) in zip(results, items, strict=True) if h]
    clean_ok = sum(r.status == "clean" for r in right)
    flagged = sum(r.detected for r in bad)
    rows = sum(r.chunks for r in results) / max(len(results), 1)
    auc = _auc([r.score or 0.0 for r in bad], [r.score or 0.0 for r in right])
    year = pair.wrong.index(long_context.WRONG_YEAR)
    on_year = any(s.start <= year < s.end for s in wrong.spans)
    return (
        f"{name:<28} {clean_ok:>3}/{len(right):<3} {flagged:>3}/{len(bad):<3} "
        f"{(clean_ok + flagged) / len(results):>6.3f} {auc:>6.3f} {rows:>6.1f} "
        f"{faithful.status:>9} {faithful.score or 0:.2f} {wrong.status:>9} {wrong.score or 0:.2f}"
        f"{' @year' if on_year else '      '} {wrong.chunks:>5} {seconds:>6.0f}"
    )


def _auc(positive: list[float], negative: list[float]) -> float:
    """P(score of a hallucinated summary > score of a faithful one), ties count half."""
    pairs = [(p > n) + 0.5 * (p == n) for p in positive for n in negative]
    return sum(pairs) / max(len(pairs), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chunk_aggregation", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--halueval", type=Path, default=halueval.DEFAULT_DIR, help="HaluEval files (fetched if missing)"
    )
    parser.add_argument("--items", type=int, default=60, help="dev-fold summarization items (x2 summaries)")
    parser.add_argument("--model", default=None, help="detector model directory (default: the shipped model)")
    parser.add_argument("--evidence-checks", action="store_true", help="keep the rule-based fact check on")
    parser.add_argument("--only", nargs="*", default=None, help="run only these rows (max, best, grounded, lexical)")
    args = parser.parse_args(argv)
    root = halueval.fetch(args.halueval)
    pairs = list(halueval.eval_pairs("summarization", ("dev",), root))[: args.items * 2]
    items = [(DetectionInput(c, q, a), h) for c, q, a, h in pairs]
    pair = long_context.build(root)

    def settings(aggregation: ChunkAggregation) -> DetectorSettings:
        return DetectorSettings(model_dir=args.model, provider="cpu", chunk_aggregation=aggregation,
                                evidence_checks=args.evidence_checks)

    print(f"HaluEval summarization dev fold (i % 10 == 1): {len(items) // 2} items x (right, hallucinated); "
          f"long-context pair: {len(pair.context)} passages; evidence checks {'on' if args.evidence_checks else 'off'}")
    print(f"{'chunk_aggregation':<28} {'right':>7} {'halluc':>7} {'acc':>6} {'AUC':>6} {'rows':>6} "
          f"{'20k faithful':>14} {'20k wrong year':>20} {'rows':>5} {'s':>6}")
    configs: list[tuple[str, ChunkAggregation, bool]] = [
        ("max", "max", False), ("best", "best", False),
        ("grounded (embedder)", "grounded", False), ("grounded (lexical fallback)", "grounded", True),
    ]
    for name, aggregation, lexical in configs:
        if args.only is not None and ("lexical" if lexical else aggregation) not in args.only:
            continue
        print(asyncio.run(evaluate(name, settings(aggregation), items, pair, lexical=lexical)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
