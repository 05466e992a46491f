"""One RAG check on CPU, the shipped detector vs the previous one, side by side on the same inputs.

The typical request: a ~400-token context of real retrieved passages (RAGTruth QA sources, or
HaluEval knowledge when RAGTruth is not at hand) and a three-sentence answer. Both detectors
run in one process, alternating check by check so machine noise falls on both; prints each
one's p50 / p90 and the ratio. The previous detector is ``bench/baselines/halueval-v2`` with the
defaults it shipped with (no role check); "span rule alone" is the shipped model without its learned
verdict, so the verdict's own cost (the support score's embedder pass) is the difference.

    python -m bench.detector_check_latency [--checks 60] [--threads 0] [--model DIR ...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from bench.detector_quality import PREVIOUS_DIR
from training.corpus import halueval, lexical, ragtruth
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.manifest import load_manifest, resolve_model_dir
from truthlens.detector.types import DetectionInput, Detector, DetectorSettings

TARGET_TOKENS = (300, 500)


def inputs(n: int, rag_root: Path, hal_root: Path) -> list[DetectionInput]:
    """``n`` contexts of 300–500 tokens with a three-sentence answer restated from them."""
    encoder = TextEncoder(load_manifest(resolve_model_dir(None)).tokenizer_path)
    sources: list[tuple[tuple[str, ...], str]] = []
    if ragtruth.available(rag_root):
        sources = [(r.context, r.question) for r in ragtruth.responses("qa", ("train", "dev"), rag_root)]
    else:
        sources = [((row["knowledge"],), row["question"]) for _, row in halueval.items("qa", ("train",), hal_root)]
    out: list[DetectionInput] = []
    seen: set[str] = set()
    for context, question in sources:
        tokens = sum(len(encoder.encode(p)) for p in context)
        if not TARGET_TOKENS[0] <= tokens <= TARGET_TOKENS[1] or context[0] in seen:
            continue
        seen.add(context[0])
        sentences = [s for p in context for s in lexical.sentences(p) if 6 <= len(s.split()) <= 40]
        if len(sentences) < 3:
            continue
        out.append(DetectionInput(context, question, " ".join(sentences[:3])))
        if len(out) == n:
            break
    return out


async def timed(detector: Detector, item: DetectionInput) -> float:
    started = time.perf_counter()
    await detector.detect(item, threshold=0.5)
    return (time.perf_counter() - started) * 1000


async def run(items: list[DetectionInput], threads: int, extra: Sequence[Path] = ()) -> dict[str, list[float]]:
    detectors = {
        "previous (halueval-v2)": create_detector(
            DetectorSettings(model_dir=str(PREVIOUS_DIR), provider="cpu", intra_op_threads=threads, role_checks=False)
        ),
        "shipped": create_detector(DetectorSettings(provider="cpu", intra_op_threads=threads)),
        # What the learned verdict adds (its support score is an embedder pass): the same model
        # with the span rule deciding alone.
        "shipped, span rule alone": create_detector(
            DetectorSettings(provider="cpu", intra_op_threads=threads, learned_verdict=False)
        ),
        # Other model directories (an ensemble, an optional model package) with their defaults.
        **{m.name: create_detector(DetectorSettings(model_dir=str(m), provider="cpu", intra_op_threads=threads))
           for m in extra},
    }
    times: dict[str, list[float]] = {name: [] for name in detectors}
    try:
        for detector in detectors.values():  # warm-up: sessions, embedder, caches of the first input
            await timed(detector, items[0])
        for item in items[1:]:
            for name, detector in detectors.items():
                times[name].append(await timed(detector, item))
    finally:
        for detector in detectors.values():
            await detector.close()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.detector_check_latency", description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=60)
    parser.add_argument("--threads", type=int, default=0, help="ONNX Runtime intra-op threads (0: its default)")
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--model", type=Path, nargs="*", default=[], help="also these model directories")
    args = parser.parse_args(argv)
    items = inputs(args.checks + 1, args.ragtruth, halueval.fetch(args.halueval))
    times = asyncio.run(run(items, args.threads, args.model))
    print(f"{len(items) - 1} checks each, context {TARGET_TOKENS[0]}-{TARGET_TOKENS[1]} tokens, three-sentence answers")
    p50 = {}
    for name, values in times.items():
        p50[name] = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"{name:<26} p50 {p50[name]:7.1f} ms   p90 {p90:7.1f} ms")
    print(f"ratio shipped / previous p50: {p50['shipped'] / p50['previous (halueval-v2)']:.2f}x; "
          f"shipped / span rule alone: {p50['shipped'] / p50['shipped, span rule alone']:.2f}x "
          f"(+{p50['shipped'] - p50['shipped, span rule alone']:.1f} ms for the verdict)")
    for model in args.model:
        print(f"ratio {model.name} / shipped p50: {p50[model.name] / p50['shipped']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
