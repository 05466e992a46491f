"""Detector latency by input length (256 … 16k tokens): cost grows linearly once chunked.

Runs the real ONNX detector (default: the shipped model) on one answer beside contexts of
growing size, measured in one process, and prints per-length latency, the number of model
rows, the cost per 1k input tokens and the ratio to the previous length. Linear scaling
shows as a flat "ms / 1k tok" column and ratios close to the length ratio (2x). With the
default ``grounded`` rows the row count stays at one per answer sentence and the part that
grows with the context is the sentence-embedding pass, which the embedder caches: "first ms"
is the first (uncached) check of each context, "ms" the median of the repeats, "cpu ms" the
median CPU time of the process (all threads) per check, which other jobs on a shared machine
disturb less than the wall clock.

    python -m bench.detector_length_scaling [--model DIR] [--repeats 3] [--threads 0] [--chunk-aggregation max]
        [--max-tokens 16384] [--compare max] [--chart PNG]

``--compare AGG`` runs the lengths again with another chunk aggregation; ``--chart`` draws each
run's median (and the first run's uncached first check) against context length (bench/charts.py;
the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from pathlib import Path

from bench import charts
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import load_manifest, resolve_model_dir
from truthlens.detector.types import CHUNK_AGGREGATIONS, ChunkAggregation, DetectionInput, DetectorSettings

LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384)
ANSWER = "The bridge over the river was opened in 1932 and is 412 metres long. It carries two tracks."
QUESTION = "When was the bridge opened and how long is it?"
WORDS = (
    "river", "bridge", "town", "market", "station", "tower", "council", "museum", "harbour", "railway",
    "century", "engineer", "opened", "built", "length", "metres", "tracks", "road", "north", "south",
    "east", "west", "old", "new", "stone", "steel",
)


def make_context(encoder: TextEncoder, target_tokens: int, rng: random.Random) -> list[str]:
    """Passages of plain sentences totalling about ``target_tokens`` tokens."""
    passages: list[str] = []
    total = 0
    while total < target_tokens:
        sentences = [
            f"The {rng.choice(WORDS)} near the {rng.choice(WORDS)} was {rng.choice(WORDS)} "
            f"in {rng.randint(1800, 2020)}."
            for _ in range(6)
        ]
        passage = " ".join(sentences)
        total += len(encoder.encode(passage))
        passages.append(passage)
    return passages


async def run(model: str | None, repeats: int, threads: int, aggregation: ChunkAggregation,
              lengths: tuple[int, ...] = LENGTHS) -> list[tuple[int, float, float, float]]:
    """Prints the table; returns its (context tokens, first ms, median ms, median CPU ms) rows."""
    manifest = load_manifest(resolve_model_dir(model))
    encoder = TextEncoder(manifest.tokenizer_path)
    detector = create_detector(
        DetectorSettings(model_dir=model, provider="cpu", intra_op_threads=threads, chunk_aggregation=aggregation)
    )
    assert isinstance(detector, DetectorEngine)
    rng = random.Random(0)
    warm = DetectionInput(make_context(encoder, 256, rng), QUESTION, ANSWER)
    await detector.detect(warm, threshold=0.5)
    print(f"model {manifest.directory} ({manifest.source.get('architecture')}, {manifest.quantization}), "
          f"window {manifest.max_length} tokens, provider {detector.provider}, chunk_aggregation "
          f"{aggregation}, median of {repeats}")
    print(
        f"{'context tok':>11} {'rows':>5} {'first ms':>9} {'ms':>9} {'cpu ms':>9} {'ms / 1k tok':>12} "
        f"{'x prev len':>10} {'x prev ms':>10}"
    )
    previous: tuple[int, float] | None = None
    measured: list[tuple[int, float, float, float]] = []
    for length in lengths:
        item = DetectionInput(make_context(encoder, length, rng), QUESTION, ANSWER)
        times = []
        cpu_times = []
        rows = 0
        for _ in range(repeats):
            started, cpu_started = time.perf_counter(), time.process_time()
            result = await detector.detect(item, threshold=0.5)
            times.append((time.perf_counter() - started) * 1000)
            cpu_times.append((time.process_time() - cpu_started) * 1000)
            rows = result.chunks
        ms, cpu_ms = statistics.median(times), statistics.median(cpu_times)
        tokens = sum(len(encoder.encode(p)) for p in item.context)
        ratio_len = f"{tokens / previous[0]:.2f}" if previous else "-"
        ratio_ms = f"{ms / previous[1]:.2f}" if previous else "-"
        print(
            f"{tokens:>11} {rows:>5} {times[0]:>9.1f} {ms:>9.1f} {cpu_ms:>9.1f} {ms / tokens * 1000:>12.1f} "
            f"{ratio_len:>10} {ratio_ms:>10}"
        )
        previous = (tokens, ms)
        measured.append((tokens, times[0], ms, cpu_ms))
    await detector.close()
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0: default)")
    parser.add_argument("--chunk-aggregation", choices=CHUNK_AGGREGATIONS, default=DetectorSettings().chunk_aggregation)
    parser.add_argument("--max-tokens", type=int, default=LENGTHS[-1], help="the longest context measured")
    parser.add_argument("--compare", choices=CHUNK_AGGREGATIONS, help="also run the lengths with this aggregation")
    parser.add_argument("--chart", type=Path, help="also draw ms against context tokens as this PNG")
    args = parser.parse_args()
    lengths = tuple(n for n in LENGTHS if n <= args.max_tokens)
    wall: dict[str, list[tuple[int, float]]] = {}
    cpu: dict[str, list[tuple[int, float]]] = {}
    for aggregation in (args.chunk_aggregation, *([args.compare] if args.compare else [])):
        rows = asyncio.run(run(args.model, args.repeats, args.threads, aggregation, lengths))
        if not wall:
            wall[f"{aggregation}: first check of a new context"] = [(row[0], row[1]) for row in rows]
        wall[f"{aggregation}: median of {args.repeats}"] = [(row[0], row[2]) for row in rows]
        cpu[f"{aggregation}: median of {args.repeats}"] = [(row[0], row[3]) for row in rows]
        print()
    if args.chart:
        panels = {"wall-clock ms per check": wall, "CPU ms per check (all threads)": cpu}
        charts.latency_by_length(panels, args.chart, "Detector latency by context length, shipped model on CPU "
                                 "(python -m bench.detector_length_scaling)")


if __name__ == "__main__":
    main()
