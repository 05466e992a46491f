"""Our ONNX detector vs LettuceDetect's own ``TransformerDetector`` on one checkpoint.

Same trained Hugging Face checkpoint, same inputs, measured side by side in one process:
- latency at 1 caller (p50 / p95) of the whole check (ours: ``DetectorEngine.detect``, what
  ``truthlens detect`` runs: tokenising, grounded rows, fact checks, spans), in blocks of
  inputs with the runtimes taking turns, so all see the same machine load;
- checks/s at 1 and N concurrent callers (ours: asyncio callers; LettuceDetect: N threads
  calling ``predict``, torch releases the GIL);
- ours in variants side by side: fp32, int8 without and with fused attention
  (``truthlens export --no-optimize`` / the default), and the int8 graph with one run at a
  time using every thread (the old in-process setting) vs two runs in flight with the threads
  split between them (the default);
- the first check of a new 2k- and 8k-token context (``--long``): the 8k/2k ratio;
- token-level agreement of predictions (P(hallucinated) > 0.5) of our fp32 and int8 ONNX
  models with LettuceDetect, and with LettuceDetect fed segment ids as well (its
  ``TransformerDetector`` passes only ``input_ids`` and ``attention_mask`` to the model,
  so a BERT-family checkpoint trained with ``token_type_ids`` sees zeros there).

    python -m bench.detector_vs_lettucedetect --hf-model training/output/hf \
        [--onnx-model DIR] [--onnx-int8-model DIR] [--inputs FILE.jsonl] [--n 200] [--concurrency 8]

Without ``--onnx-model`` / ``--onnx-int8-model`` the checkpoint is exported (fp32 / int8)
to a temporary directory with the project's exporter. ``--inputs`` takes JSONL rows with
``context``, ``question``, ``answer``, or RAGTruth rows (``source.passages``, ``responses``).
Needs the ``export`` extra and ``lettucedetect`` (``pip install --no-deps lettucedetect``: it
runs on torch and transformers, which the extra has).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from truthlens.detector.encoding import TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.factory import create_detector
from truthlens.detector.manifest import load_manifest
from truthlens.detector.prompt import build_prompt
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
    items: list[DetectionInput] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            items.extend(_rows(json.loads(line)))
            if len(items) >= n:
                items = items[:n]
                break
    if len(items) < n:
        print(f"note: {path} has only {len(items)} inputs")
    return items


def _rows(row: dict[str, Any]) -> list[DetectionInput]:
    if "source" in row and "responses" in row:  # RAGTruth QA: "passage 1:... passage 2:..."
        passages = tuple(p.strip() for p in re.split(r"passage \d+:", row["source"]["passages"]) if p.strip())
        return [DetectionInput(passages, row["source"]["question"], r["response"]) for r in row["responses"][:2]]
    return [DetectionInput(tuple(row["context"]), row["question"], row["answer"])]


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def export_dirs(hf: Path, fp32: Path | None, int8: Path | None, tmp: Path) -> tuple[Path, Path, Path]:
    """fp32, int8 without fused attention, int8 (the default export: fused, then quantised)."""
    from truthlens.detector.export import export_model

    if fp32 is None:
        fp32 = tmp / "fp32"
        export_model(hf, fp32, quantize="none")
    plain = tmp / "int8-unfused"
    export_model(hf, plain, quantize="int8", optimize=False)
    if int8 is None:
        int8 = tmp / "int8"
        export_model(hf, int8, quantize="int8")
    return fp32, plain, int8


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
        fp32_dir, plain_dir, int8_dir = export_dirs(args.hf_model, args.onnx_model, args.onnx_int8_model, Path(tmp))
        manifest = load_manifest(fp32_dir)
        # The in-process default: two runs in flight, the threads split between them.
        split = DetectorSettings(provider="cpu", intra_op_threads=max(1, threads // 2), max_in_flight=2)
        # The previous default: one run at a time with every thread, rows micro-batched.
        one_run = DetectorSettings(provider="cpu", intra_op_threads=threads, max_batch_size=args.concurrency)
        ours: dict[str, DetectorEngine] = {}
        for name, settings, directory in (
            ("onnx fp32", split, fp32_dir),
            ("onnx int8 unfused", split, plain_dir),
            ("onnx int8 1 run", one_run, int8_dir),
            ("onnx int8", split, int8_dir),
        ):
            engine = create_detector(DetectorSettings(**{**_fields(settings), "model_dir": str(directory)}))
            assert isinstance(engine, DetectorEngine)
            ours[name] = engine
        ld = lettuce(args.hf_model, manifest.max_length, segment_ids=False)
        ld_seg = lettuce(args.hf_model, manifest.max_length, segment_ids=True)

        encoder = TextEncoder(manifest.tokenizer_path)
        tokens = [encoder.count(build_prompt(i.context, i.question)) + encoder.count(i.answer) for i in items]
        print(f"checkpoint {args.hf_model} ({manifest.source.get('architecture')}), window {manifest.max_length}, "
              f"{len(items)} inputs from {args.inputs} (prompt + answer tokens: p50 {statistics.median(tokens):.0f}), "
              f"{threads} threads each, CPU; ours: whole detect (rows, fact checks, spans)")
        # warm-up every runtime
        for item in items[:3]:
            lettuce_probs(ld, item)
            for engine in ours.values():
                await engine.detect(item, threshold=0.5)

        # Blocks of inputs per runtime, in rotating order: interleaving single calls would let
        # one runtime's spinning worker threads (OpenMP, onnxruntime) slow the other down.
        lat: dict[str, list[float]] = {"lettucedetect": [], **{name: [] for name in ours}}
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
                        lat[name].append(await timed_ours(ours[name], item))

        tput: dict[str, dict[int, float]] = {name: {} for name in lat}
        for callers in (1, args.concurrency):
            tput["lettucedetect"][callers] = throughput_lettuce(ld, items, callers)
            for name, engine in ours.items():
                tput[name][callers] = await throughput_ours(engine, items, callers)

        n = args.concurrency
        base_p50 = statistics.median(lat["lettucedetect"])
        base_p95 = percentile(lat["lettucedetect"], 95)
        print()
        print(f"{'detector':<18} {'p50 ms':>8} {'p95 ms':>8} {'p50 x':>7} {'p95 x':>7} {'checks/s @1':>12} "
              f"{'x':>6} {f'checks/s @{n}':>12} {'x':>6} {f'@{n} / @1':>8}")
        for name, values in lat.items():
            p50, p95 = statistics.median(values), percentile(values, 95)
            one, many = tput[name][1], tput[name][n]
            print(f"{name:<18} {p50:>8.1f} {p95:>8.1f} {base_p50 / p50:>7.2f} {base_p95 / p95:>7.2f} {one:>12.2f} "
                  f"{one / tput['lettucedetect'][1]:>6.2f} {many:>12.2f} {many / tput['lettucedetect'][n]:>6.2f} "
                  f"{many / one:>8.2f}")
        print("(x = speed-up over LettuceDetect: its latency / ours, our checks/s / its)")

        ld_seg_probs = [lettuce_probs(ld_seg, i) for i in items]
        probs = {name: await our_probs(ours[name], items) for name in ("onnx fp32", "onnx int8 unfused", "onnx int8")}
        print()
        print(f"{'pair':<44} {'tokens':>7} {'token agree':>12} {'mean |dp|':>10} {'verdict agree':>14} {'skipped':>8}")
        for name, a, b in (
            ("onnx fp32 vs lettucedetect (as shipped)", probs["onnx fp32"], ld_probs),
            ("onnx fp32 vs lettucedetect + segment ids", probs["onnx fp32"], ld_seg_probs),
            ("onnx int8 vs lettucedetect + segment ids", probs["onnx int8"], ld_seg_probs),
            ("onnx int8 vs onnx fp32", probs["onnx int8"], probs["onnx fp32"]),
            ("onnx int8 vs onnx int8 unfused", probs["onnx int8"], probs["onnx int8 unfused"]),
        ):
            g = agreement(a, b)
            print(f"{name:<44} {g.tokens:>7} {g.token_agree:>12.2%} {g.mean_abs_diff:>10.4f} "
                  f"{g.example_agree:>14.2%} {g.skipped:>8}")
        if args.long:
            await long_contexts(ours["onnx int8"], encoder)
        for engine in ours.values():
            await engine.close()


async def long_contexts(engine: DetectorEngine, encoder: TextEncoder) -> None:
    """The first check of a new context (nothing cached) at about 2k and 8k tokens."""
    from bench.detector_length_scaling import ANSWER, QUESTION, make_context

    rng = random.Random(7)
    first: dict[int, float] = {}
    for length in (2048, 8192):
        times = []
        for _ in range(3):  # a new context each time: the embedder caches what it has seen
            item = DetectionInput(tuple(make_context(encoder, length, rng)), QUESTION, ANSWER)
            started = time.perf_counter()
            await engine.detect(item, threshold=0.5)
            times.append((time.perf_counter() - started) * 1000)
        first[length] = statistics.median(times)
    print()
    print(f"first check of a new context: 2k tokens {first[2048]:.0f} ms, 8k tokens {first[8192]:.0f} ms, "
          f"8k / 2k {first[8192] / first[2048]:.2f}")


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
    parser.add_argument("--long", action="store_true", help="also time a new 2k- and 8k-token context")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
