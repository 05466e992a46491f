"""Evidence gating's effect on detection time and verdicts with long contexts (4k, 16k tokens).

Each context is the passage that answers the question hidden among generated off-topic
passages (the probes of ``bench/gating_data.py`` plus synthetic company/town records) until it
holds about N detector tokens. For a faithful and a hallucinated answer it times the detector
on the full context, and gating + the detector on the gated context, in the same run, and
prints both verdicts side by side. Gating is timed cold (every passage embedded) and warm (the
passages already in the embedder's cache, as when a RAG corpus repeats them).

    python -m bench.gating_speedup [--tokens 4096 16384] [--repeats 3] [--model-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

from tokenizers import Tokenizer

from bench.gating_data import PROBES
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.manifest import resolve_model_dir
from truthlens.detector.types import DetectionInput, DetectorSettings
from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.evidence.gating import EvidenceSettings, gate
from truthlens.modes.base import GroundedQuery

QUESTION, ANSWERING, _ = PROBES[1]  # the Eiffel Tower
FAITHFUL = "The Eiffel Tower was completed in March 1889."
HALLUCINATED = "The Eiffel Tower was completed in June 1925 by Gustave Flaubert."

_NOUNS = ("brewery", "rowing club", "software firm", "bakery", "library", "shipyard", "orchestra", "clinic")
_TOWNS = ("Ashford", "Brindle", "Colmar", "Dunmore", "Elsworth", "Fenwick", "Galway", "Harlow")


def _filler(rng: random.Random) -> str:
    noun, town = rng.choice(_NOUNS), rng.choice(_TOWNS)
    return (f"The {noun} of {town} was founded in {rng.randint(1820, 2015)} and today employs "
            f"{rng.randint(4, 900)} people. Its annual report lists revenue of "
            f"{rng.randint(1, 90)} million euros, a new board chaired by a former teacher, and plans "
            f"to open {rng.randint(1, 9)} further sites in the region over the next decade.")


def build_context(tokens: int, tokenizer: Tokenizer, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    others = [p for i, (_, good, bad) in enumerate(PROBES) if i != 1 for p in (good, bad)]
    passages = [ANSWERING]
    count = len(tokenizer.encode(ANSWERING).ids)
    while count < tokens:
        text = rng.choice(others) if rng.random() < 0.3 else _filler(rng)
        passages.append(text)
        count += len(tokenizer.encode(text).ids)
    rng.shuffle(passages)
    return passages


async def _timed(coro_factory, repeats: int):  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = await coro_factory()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[4096, 16384])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-dir", default=None, help="detector model directory (default: shipped)")
    args = parser.parse_args()

    detector = create_detector(DetectorSettings(model_dir=args.model_dir, max_context_chars=10_000_000))
    cold_embedder = OnnxEmbedder.load(cache_size=0)
    embedder = OnnxEmbedder.load()
    tokenizer = Tokenizer.from_file(str(resolve_model_dir(args.model_dir) / "tokenizer.json"))
    variants = (("min_gate 0.5", EvidenceSettings()),
                ("+ max 8 passages", EvidenceSettings(max_passages=8)))
    print(f"detector: {resolve_model_dir(args.model_dir).name}; median of {args.repeats}; "
          f"gate timed cold (cache off) and warm (passages cached)")
    print(f"{'context':>8} {'answer':<12} {'gating':<17} {'passages':>9} {'full s':>7} {'gate cold':>9} "
          f"{'gate warm':>9} {'gated det':>9} {'x cold':>7} {'x warm':>7}  verdict full -> gated")
    try:
        for tokens in args.tokens:
            passages = build_context(tokens, tokenizer)
            query = GroundedQuery(model="m", question=QUESTION, passages=tuple(passages), messages=())
            for label, answer in (("faithful", FAITHFUL), ("hallucinated", HALLUCINATED)):
                full_item = DetectionInput(passages, QUESTION, answer)
                full_s, full = await _timed(
                    lambda i=full_item: detector.detect(i, threshold=0.5, timeout_s=600), args.repeats)
                for name, settings in variants:
                    cold_s, gated = await _timed(
                        lambda q=query, st=settings: gate(q, st, cold_embedder), args.repeats)
                    await gate(query, settings, embedder)  # fill the cache
                    warm_s, _ = await _timed(lambda q=query, st=settings: gate(q, st, embedder), args.repeats)
                    gated_item = DetectionInput(gated.query.passages, QUESTION, answer)
                    det_s, small = await _timed(
                        lambda i=gated_item: detector.detect(i, threshold=0.5, timeout_s=600), args.repeats)
                    kept = "" if ANSWERING in gated.query.passages else " (answering passage LOST)"
                    verdicts = (f"{full.status} {full.score:.3f} ({full.chunks} rows) -> "
                                f"{small.status} {small.score:.3f} ({small.chunks} rows){kept}")
                    print(f"{tokens:>8} {label:<12} {name:<17} {len(passages):>4}->{len(gated.query.passages):<4} "
                          f"{full_s:>7.2f} {cold_s:>9.2f} {warm_s:>9.3f} {det_s:>9.2f} "
                          f"{full_s / (cold_s + det_s):>6.1f}x {full_s / (warm_s + det_s):>6.1f}x  {verdicts}")
    finally:
        await detector.close()
        embedder.close()
        cold_embedder.close()


if __name__ == "__main__":
    asyncio.run(main())
