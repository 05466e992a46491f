"""What the clause check (``facts/clauses.py``) costs beside the model's own inference, on ~500-token inputs.

The inputs are those of :mod:`bench.detector_check_latency`: real retrieved passages of 300–500
tokens (RAGTruth QA sources of the odd half, else HaluEval QA knowledge of the train fold) and a
three-sentence answer restated from them. Per input, timed one after the other on one thread
(no cache: a context is read anew each time, as the first check of a request reads it):

- the clause check alone: reading the context's clauses and aligning the answer's;
- the whole fact check (numbers, dates, names, roles, relations, restatements and clauses);
- the model's inference: the shipped model's token scores for the input (tokenising, the ONNX
  Runtime pass over every window; no fact check, no verdict).

    python -m bench.clause_cost [--checks 40]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import time
from collections.abc import Callable

from bench.detector_check_latency import inputs
from training.corpus import halueval, ragtruth
from truthlens.detector import facts
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.facts.clauses import context_clauses, moved_terms
from truthlens.detector.types import DetectionInput, DetectorSettings


def _uncached() -> None:
    for cache in (facts._index, facts._sentences, facts._relations, facts._clauses):
        cache.cache_clear()


def _clause_check(item: DetectionInput) -> object:
    return moved_terms(item.answer, context_clauses(item.context), item.question)


def _ms(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return (time.perf_counter() - started) * 1000


async def measure(items: list[DetectionInput]) -> dict[str, list[float]]:
    engine = create_detector(DetectorSettings(provider="cpu", intra_op_threads=1))
    assert isinstance(engine, DetectorEngine)
    out: dict[str, list[float]] = {"clause check": [], "whole fact check": [], "model inference": []}
    try:
        await engine.token_scores(items[0])  # warm-up: sessions and arenas
        for item in items:
            out["clause check"].append(_ms(functools.partial(_clause_check, item)))
            _uncached()
            out["whole fact check"].append(_ms(functools.partial(facts.check_facts, item.answer, item.context,
                                                                 item.question)))
            started = time.perf_counter()
            await engine.token_scores(item)
            out["model inference"].append((time.perf_counter() - started) * 1000)
    finally:
        await engine.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.clause_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=40)
    args = parser.parse_args(argv)
    items = inputs(args.checks, ragtruth.DEFAULT_DIR, halueval.DEFAULT_DIR)
    times = asyncio.run(measure(items))
    print(f"{len(items)} inputs of 300-500 context tokens, a three-sentence answer; one thread (loaded machine)")
    print(f"{'':<18} {'p50 ms':>8} {'p90 ms':>8}")
    for name, values in times.items():
        values = sorted(values)
        print(f"{name:<18} {statistics.median(values):>8.2f} {values[int(0.9 * (len(values) - 1))]:>8.2f}")
    ratio = [c / m for c, m in zip(times["clause check"], times["model inference"], strict=True)]
    print(f"clause check / model inference, per input: median {statistics.median(ratio):.3f}, max {max(ratio):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
