"""One ONNX call with all of a check's rows, or a call per row: which is faster on this CPU.

The checks that need more than one model row (inputs over the window, ``grounded`` rows) of
the given RAGTruth QA inputs, each timed three ways with the runtimes taking turns per check:

- ``split``: a call per row, the rows two at a time on two sessions of half the cores each (the
  in-process default: ``max_in_flight`` 2, threads split);
- ``alone``: a call per row, one after another on one session with every core;
- ``one call``: the rows right-padded into one batch on the every-core session.

It prints the time per check of each (p50 / mean / p95), the padding one call adds, and how far
one call moves the answer tokens' probabilities (dynamic int8 quantises activations with one
scale per tensor, so a row's output depends on its batch-mates)::

    python -m bench.row_calls --inputs training/output/ragtruth/ragtruth_qa.jsonl --n 120
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bench.detector_vs_lettucedetect import load_inputs, percentile
from truthlens.detector.backends.onnx import OnnxRunner, usable_cores
from truthlens.detector.encoding import ModelRow, TextEncoder
from truthlens.detector.grounding import plan_grounded
from truthlens.detector.manifest import load_manifest, resolve_model_dir
from truthlens.detector.prompt import checked
from truthlens.detector.relevance import load_relevance
from truthlens.detector.scoring.token_scorer import distinct_rows
from truthlens.detector.types import DetectorSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, default=Path("training/output/ragtruth/ragtruth_qa.jsonl"))
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--model-dir", default=None, help="detector model directory (default: the shipped one)")
    args = parser.parse_args()
    manifest = load_manifest(resolve_model_dir(args.model_dir))
    encoder = TextEncoder(manifest.tokenizer_path)
    relevance = load_relevance(1)
    checks: list[list[ModelRow]] = []
    for item in map(checked, load_inputs(args.inputs, args.n)):
        answer = encoder.encode(item.answer)
        plan = plan_grounded(encoder, list(item.context), item.question, item.answer, answer, relevance,
                             max_length=manifest.max_length, answer_overlap_tokens=32)
        rows, _ = distinct_rows(plan.rows)
        if len(rows) > 1:
            checks.append(rows)
    cores = usable_cores()
    half = OnnxRunner(manifest, DetectorSettings(provider="cpu", intra_op_threads=max(1, cores // 2)), encoder.pad_id)
    whole = OnnxRunner(manifest, DetectorSettings(provider="cpu", intra_op_threads=cores), encoder.pad_id)
    whole.rows_alone = False  # run() then sends a check's rows as one padded batch
    pool = ThreadPoolExecutor(2)

    def split(rows: list[ModelRow]) -> list[np.ndarray]:
        return [p for out in pool.map(lambda r: half.run([r]), rows) for p in out]

    def alone(rows: list[ModelRow]) -> list[np.ndarray]:
        return [whole.run([r])[0] for r in rows]

    ways = {"split": split, "alone": alone, "one call": whole.run}
    times: dict[str, list[float]] = {name: [] for name in ways}
    drift: list[float] = []
    for i, rows in enumerate(checks):
        names = list(ways)[i % 3:] + list(ways)[: i % 3]  # turns, so all see the same load
        outputs = {}
        for name in names:
            started = time.perf_counter()
            outputs[name] = ways[name](rows)
            times[name].append((time.perf_counter() - started) * 1000.0)
        drift.extend(float(np.abs(a - b).max()) for a, b in zip(outputs["one call"], outputs["alone"], strict=True))
    tokens = sum(r.length for rows in checks for r in rows)
    padded = sum(len(rows) * max(r.length for r in rows) for rows in checks)
    print(f"{len(checks)} checks with 2+ rows of {args.n} inputs ({args.inputs}), "
          f"{statistics.fmean(len(r) for r in checks):.2f} rows each, {cores} cores")
    print(f"{'way':<10}{'p50 ms':>9}{'mean ms':>9}{'p95 ms':>9}{'x split':>9}")
    base = statistics.fmean(times["split"])
    for name, values in times.items():
        print(f"{name:<10}{percentile(values, 50):>9.1f}{statistics.fmean(values):>9.1f}"
              f"{percentile(values, 95):>9.1f}{base / statistics.fmean(values):>9.2f}")
    print(f"one call pads {padded / tokens - 1:.1%} more tokens; its probabilities against a row alone: "
          f"max |dp| per row p50 {percentile(drift, 50):.4f}, max {max(drift):.4f}")


if __name__ == "__main__":
    main()
