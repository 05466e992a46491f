"""Our ONNX detector vs LettuceDetect's own ``TransformerDetector`` on one checkpoint.

Same trained Hugging Face checkpoint, same inputs, measured side by side in one process:
- latency at 1 caller (p50 / p95), in blocks of inputs with the runtimes taking turns, so
  all see the same machine load;
- throughput at N concurrent callers (ours: micro-batched asyncio callers; LettuceDetect:
  N threads calling ``predict``, torch releases the GIL);
- token-level agreement of predictions (P(hallucinated) > 0.5) of our fp32 and int8 ONNX
  models with LettuceDetect, and with LettuceDetect fed segment ids as well (its
  ``TransformerDetector`` passes only ``input_ids`` and ``attention_mask`` to the model,
  so a BERT-family checkpoint trained with ``token_type_ids`` sees zeros there).

    python -m bench.detector_vs_lettucedetect --hf-model training/output/hf \
        [--onnx-model DIR] [--onnx-int8-model DIR] [--inputs FILE.jsonl] [--n 200] [--concurrency 8]

Without ``--onnx-model`` / ``--onnx-int8-model`` the checkpoint is exported (fp32 / int8)
to a temporary directory with the project's exporter. Needs the ``export`` extra and
``lettucedetect`` (with torch, CPU).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from truthlens.detector.engine import DetectorEngine
from truthlens.detector.factory import create_detector
from truthlens.detector.manifest import load_manifest
from truthlens.detector.types import DetectionInput, DetectorSettings

DEFAULT_INPUTS = Path("training/output/corpus/heldout.jsonl")
BLOCK = 25  # inputs timed per runtime before switching to the next


@dataclass(frozen=True, slots=True)
class Agreement:
    tokens: int
    token_agree: float
    mean_abs_diff: float
    example_agree: float
    skipped: int  # inputs whose answer tokenisation differed (not compared)


def load_inputs(path: Path, n: int) -> list[DetectionInput]:
    items = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            items.append(DetectionInput(tuple(row["context"]), row["question"], row["answer"]))
            if len(items) == n:
                break
    if len(items) < n:
        print(f"note: {path} has only {len(items)} inputs")
    return items


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def export_dirs(hf: Path, fp32: Path | None, int8: Path | None, tmp: Path) -> tuple[Path, Path]:
    from truthlens.detector.export import export_model

    if fp32 is None:
        fp32 = tmp / "fp32"
        export_model(hf, fp32, quantize="none")
    if int8 is None:
        int8 = tmp / "int8"
        export_model(hf, int8, quantize="int8")
    return fp32, int8


def lettuce(hf: Path, max_length: int, segment_ids: bool) -> Any:
    """LettuceDetect's detector; with ``segment_ids`` its model also gets ``token_type_ids``."""
    from lettucedetect.detectors.transformer import TransformerDetector

    detector = TransformerDetector(model_path=str(hf), max_length=max_length, device="cpu")
    if segment_ids:
        model = detector.model
        sep = detector.tokenizer.sep_token_id
        plain_forward = model.forward

        def forward(input_ids: Any = None, attention_mask: Any = None, **kw: Any) -> Any:
            # segment 1 starts after the first [SEP], as the tokenizer's pair encoding does
            first_sep = (input_ids == sep).int().argmax(dim=1, keepdim=True)
            positions = __import__("torch").arange(input_ids.shape[1]).unsqueeze(0)
            types = (positions > first_sep).long() * attention_mask
            return plain_forward(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=types, **kw)

        model.forward = forward
    return detector


def lettuce_probs(detector: Any, item: DetectionInput) -> np.ndarray:
    tokens = detector.predict(list(item.context), item.answer, item.question, output_format="tokens")
    # LettuceDetect labels from the answer start to the end, so its list ends with the final [SEP].
    return np.asarray([t["prob"] for t in tokens[:-1]], dtype=np.float32)


async def our_probs(detector: DetectorEngine, items: Sequence[DetectionInput]) -> list[np.ndarray]:
    return [(await detector.token_scores(item)).probs for item in items]


def agreement(ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray]) -> Agreement:
    agree = total = skipped = same_verdict = 0
    diffs: list[float] = []
    for a, b in zip(ours, theirs, strict=True):
        if len(a) != len(b):
            skipped += 1
            continue
        agree += int(np.sum((a > 0.5) == (b > 0.5)))
        total += len(a)
        diffs.extend(np.abs(a - b).tolist())
        same_verdict += int(bool(np.any(a > 0.5)) == bool(np.any(b > 0.5)))
    compared = len(ours) - skipped
    return Agreement(
        tokens=total,
        token_agree=agree / max(total, 1),
        mean_abs_diff=float(np.mean(diffs)) if diffs else float("nan"),
        example_agree=same_verdict / max(compared, 1),
        skipped=skipped,
    )


async def timed_ours(detector: DetectorEngine, item: DetectionInput) -> float:
    started = time.perf_counter()
    await detector.detect(item, threshold=0.5)
    return (time.perf_counter() - started) * 1000


async def throughput_ours(detector: DetectorEngine, items: Sequence[DetectionInput], concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(item: DetectionInput) -> None:
        async with gate:
            await detector.detect(item, threshold=0.5)

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in items))
    return len(items) / (time.perf_counter() - started)


def throughput_lettuce(detector: Any, items: Sequence[DetectionInput], concurrency: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda i: lettuce_probs(detector, i), items))
    return len(items) / (time.perf_counter() - started)


async def run(args: argparse.Namespace) -> None:
    import torch

    threads = args.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    items = load_inputs(args.inputs, args.n)
    with tempfile.TemporaryDirectory(prefix="truthlens-bench-") as tmp:
        fp32_dir, int8_dir = export_dirs(args.hf_model, args.onnx_model, args.onnx_int8_model, Path(tmp))
        manifest = load_manifest(fp32_dir)
        settings = DetectorSettings(provider="cpu", intra_op_threads=threads, max_batch_size=args.concurrency)
        ours = create_detector(DetectorSettings(**{**_fields(settings), "model_dir": str(fp32_dir)}))
        ours8 = create_detector(DetectorSettings(**{**_fields(settings), "model_dir": str(int8_dir)}))
        assert isinstance(ours, DetectorEngine) and isinstance(ours8, DetectorEngine)
        ld = lettuce(args.hf_model, manifest.max_length, segment_ids=False)
        ld_seg = lettuce(args.hf_model, manifest.max_length, segment_ids=True)

        print(f"checkpoint {args.hf_model} ({manifest.source.get('architecture')}), window {manifest.max_length}, "
              f"{len(items)} inputs from {args.inputs}, {threads} threads each, CPU")
        # warm-up both sides
        for item in items[:3]:
            lettuce_probs(ld, item)
            await ours.detect(item, threshold=0.5)
            await ours8.detect(item, threshold=0.5)

        # Blocks of inputs per runtime, in rotating order: interleaving single calls would let
        # one runtime's spinning worker threads (OpenMP, onnxruntime) slow the other down.
        lat: dict[str, list[float]] = {"lettucedetect": [], "onnx fp32": [], "onnx int8": []}
        ld_probs: list[np.ndarray] = []  # kept for the agreement table below
        for start in range(0, len(items), BLOCK):
            block = items[start : start + BLOCK]
            for name in _rotate(list(lat), start // BLOCK):
                for item in block:
                    if name == "lettucedetect":
                        started = time.perf_counter()
                        ld_probs.append(lettuce_probs(ld, item))
                        lat[name].append((time.perf_counter() - started) * 1000)
                    else:
                        lat[name].append(await timed_ours(ours if name == "onnx fp32" else ours8, item))

        tput = {
            "lettucedetect": throughput_lettuce(ld, items, args.concurrency),
            "onnx fp32": await throughput_ours(ours, items, args.concurrency),
            "onnx int8": await throughput_ours(ours8, items, args.concurrency),
        }

        base_p50 = statistics.median(lat["lettucedetect"])
        base_p95 = percentile(lat["lettucedetect"], 95)
        print()
        print(f"{'detector':<14} {'p50 ms':>8} {'p95 ms':>8} {'p50 x':>7} {'p95 x':>7} "
              f"{'checks/s @' + str(args.concurrency):>14} {'tput x':>7}")
        for name, values in lat.items():
            p50, p95 = statistics.median(values), percentile(values, 95)
            print(f"{name:<14} {p50:>8.1f} {p95:>8.1f} {base_p50 / p50:>7.2f} {base_p95 / p95:>7.2f} "
                  f"{tput[name]:>14.2f} {tput[name] / tput['lettucedetect']:>7.2f}")
        print("(x = speed-up over LettuceDetect: its latency / ours, our throughput / its)")

        ld_seg_probs = [lettuce_probs(ld_seg, i) for i in items]
        fp32_probs = await our_probs(ours, items)
        int8_probs = await our_probs(ours8, items)
        print()
        print(f"{'pair':<42} {'tokens':>7} {'token agree':>12} {'mean |dp|':>10} {'verdict agree':>14} {'skipped':>8}")
        for name, a, b in (
            ("onnx fp32 vs lettucedetect (as shipped)", fp32_probs, ld_probs),
            ("onnx fp32 vs lettucedetect + segment ids", fp32_probs, ld_seg_probs),
            ("onnx int8 vs lettucedetect + segment ids", int8_probs, ld_seg_probs),
            ("onnx int8 vs onnx fp32", int8_probs, fp32_probs),
        ):
            g = agreement(a, b)
            print(f"{name:<42} {g.tokens:>7} {g.token_agree:>12.2%} {g.mean_abs_diff:>10.4f} "
                  f"{g.example_agree:>14.2%} {g.skipped:>8}")
        await ours.close()
        await ours8.close()


def _rotate(names: list[str], k: int) -> list[str]:
    k %= len(names)
    return names[k:] + names[:k]


def _fields(settings: DetectorSettings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in DetectorSettings.__dataclass_fields__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hf-model", type=Path, default=Path("training/output/hf"))
    parser.add_argument("--onnx-model", type=Path, default=None, help="fp32 model directory of the same checkpoint")
    parser.add_argument(
        "--onnx-int8-model", type=Path, default=None, help="int8 model directory of the same checkpoint"
    )
    parser.add_argument("--inputs", type=Path, default=DEFAULT_INPUTS, help="JSONL with context, question, answer")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--threads", type=int, default=0, help="threads for torch and onnxruntime (0: all cores)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
