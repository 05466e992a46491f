"""Our ONNX detector vs LettuceDetect's own ``TransformerDetector`` on one checkpoint.

Same trained Hugging Face checkpoint, same inputs, measured side by side in one process:
- latency at 1 caller (p50 / p95 / mean per item) of the whole check (ours:
  ``DetectorEngine.detect``, what ``truthlens detect`` runs: tokenising, grounded rows, fact
  checks, spans), in blocks of inputs with the runtimes taking turns, so all see the same
  machine load; this pass is each context's first check (the relevance embedder has not seen it);
- checks/s at 1 and N concurrent callers (ours: asyncio callers; LettuceDetect: N threads
  calling ``predict``, torch releases the GIL), ``--repeats`` times with the runtimes taking
  turns; each ratio is printed as the median with its spread over the repeats;
- ours in variants side by side, all with the in-process defaults (two runs in flight, a lone
  row on every core) unless named: fp32, int8 without and with fused attention
  (``truthlens export --no-optimize`` / the default), blockwise int8 (``--int8-blockwise``: finer
  activation scales, closer to fp32), and the int8 graph with the threads split
  between two runs and no lone-row session (the previous setting, "int8 split");
- token-level agreement of predictions (P(hallucinated) > 0.5) of our fp32 and int8 ONNX
  models with LettuceDetect, and with LettuceDetect fed segment ids as well (its
  ``TransformerDetector`` passes only ``input_ids`` and ``attention_mask`` to the model,
  so a BERT-family checkpoint trained with ``token_type_ids`` sees zeros there); and the whole
  check's verdicts and spans of "int8" vs fp32 and vs "int8 split";
- the whole check vs LettuceDetect per item on ~400-token RAG inputs (``--ragtruth``: contexts
  of 300-500 tokens from RAGTruth QA's training half with a three-sentence answer, built as
  ``bench/detector_check_latency.py`` builds them), each context checked for the first time;
- the first check of a new 2k- and 8k-token context (``--long``): the 8k/2k ratio.

    python -m bench.detector_vs_lettucedetect --hf-model training/output/hf \
        [--onnx-model DIR] [--onnx-int8-model DIR] [--inputs FILE.jsonl] [--n 200] [--concurrency 8] \
        [--repeats 3] [--ragtruth DIR] [--long]

Without ``--onnx-model`` / ``--onnx-int8-model`` the checkpoint is exported (fp32 / int8)
to a temporary directory with the project's exporter. A given ``--onnx-model`` must be the fp32
export of ``--hf-model`` (checked on five inputs: the run stops otherwise); ``--onnx-int8-model``
may be any int8 graph of the same checkpoint, e.g. the shipped one
(``src/truthlens/detector/default_model``, whose checkpoint the training recipe keeps in
``training/output/hf-llm``); its drift from fp32 is in the agreement table. ``--inputs`` takes JSONL rows with
``context``, ``question``, ``answer``, or RAGTruth rows (``source.passages``, ``responses``), of
which only the training half (odd ``source_id``) is read. Needs the ``export`` extra and
``lettucedetect`` (``pip install --no-deps lettucedetect``: it runs on torch and transformers,
which the extra has).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.detect_worker import ChildDetector, child_at
from training.corpus import halueval, ragtruth
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.backends.onnx import usable_cores
from truthlens.detector.calibration.probability import DEFAULT_THRESHOLD
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import load_manifest
from truthlens.detector.prompt import build_prompt
from truthlens.detector.types import Detection, DetectionInput, DetectorSettings

DEFAULT_INPUTS = Path("training/output/corpus/heldout.jsonl")
BLOCK = 25  # inputs timed per runtime before switching to the next
LD = "lettucedetect"
# fp32 ONNX vs the same checkpoint in torch (with segment ids): float rounding only.
SAME_MODEL_TOLERANCE = 1e-3
# Our variants (``--variants``): int8 is always timed, fp32 always runs (the agreement tables).
VARIANTS = ("fp32", "unfused", "split", "int8", "blockwise")


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
        if ragtruth.fold_of(int(row["source_id"])) == "eval":
            return []  # the evaluation half stays unseen, even by benchmarks
        passages = tuple(p.strip() for p in re.split(r"passage \d+:", row["source"]["passages"]) if p.strip())
        return [DetectionInput(passages, row["source"]["question"], r["response"]) for r in row["responses"][:2]]
    return [DetectionInput(tuple(row["context"]), row["question"], row["answer"])]


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def export_dirs(
    hf: Path, fp32: Path | None, int8: Path | None, tmp: Path, variants: Sequence[str] = VARIANTS
) -> dict[str, Path]:
    """fp32, int8 without fused attention, int8 (the default export: fused, then quantised),
    blockwise int8 (``truthlens export --int8-blockwise``); only the ``variants`` named."""
    from truthlens.detector.export.checkpoint import export_model

    if fp32 is None:
        fp32 = tmp / "fp32"
        export_model(hf, fp32, quantize="none")
    dirs = {"fp32": fp32}
    if "unfused" in variants:
        dirs["unfused"] = tmp / "int8-unfused"
        export_model(hf, dirs["unfused"], quantize="int8", optimize=False)
    if int8 is None:
        int8 = tmp / "int8"
        export_model(hf, int8, quantize="int8")
    dirs["int8"] = int8
    if "blockwise" in variants:
        dirs["blockwise"] = tmp / "int8-blockwise"
        export_model(hf, dirs["blockwise"], quantize="int8-blockwise")
    return dirs


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


def same_check(a: Detection, b: Detection) -> tuple[bool, bool]:
    """Whether two whole checks give the same verdict, and the same verdict with the same spans."""
    verdict = a.status == b.status
    return verdict, verdict and [(s.start, s.end) for s in a.spans] == [(s.start, s.end) for s in b.spans]


async def timed_ours(detector: DetectorEngine, item: DetectionInput) -> float:
    started = time.perf_counter()
    await detector.detect(item, threshold=0.5)
    return (time.perf_counter() - started) * 1000


def timed_lettuce(detector: Any, item: DetectionInput) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    probs = lettuce_probs(detector, item)
    return (time.perf_counter() - started) * 1000, probs


async def throughput_ours(detector: DetectorEngine, items: Sequence[DetectionInput], concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(item: DetectionInput) -> None:
        async with gate:
            await detector.detect(item, threshold=0.5)

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in items))
    return len(items) / (time.perf_counter() - started)


def throughput_lettuce(detector: Any, items: Sequence[DetectionInput], concurrency: int, threads: int) -> float:
    """LettuceDetect's checks/s with ``concurrency`` caller threads sharing ``threads`` torch
    threads (its best setting: one caller gets them all, 8 callers get one each)."""
    import torch

    # torch's thread count is per calling thread: a new thread does not see the main one's.
    with ThreadPoolExecutor(concurrency, initializer=torch.set_num_threads,
                            initargs=(max(1, threads // concurrency),)) as pool:
        started = time.perf_counter()
        list(pool.map(lambda i: lettuce_probs(detector, i), items))
    return len(items) / (time.perf_counter() - started)


async def interleaved(
    ours: dict[str, DetectorEngine], ld: Any, items: Sequence[DetectionInput],
    others: dict[str, ChildDetector] | None = None,
) -> tuple[dict[str, list[float]], list[np.ndarray], dict[str, list[dict[str, Any]]]]:
    """Per-item ms of every runtime, in blocks of inputs in rotating order: interleaving single
    calls would let one runtime's spinning worker threads (OpenMP, onnxruntime) slow the other
    down. Also LettuceDetect's token probabilities, and the checks of the other builds
    (``others``: each timed in its own process, in its turn)."""
    others = others or {}
    lat: dict[str, list[float]] = {LD: [], **{name: [] for name in ours}, **{name: [] for name in others}}
    ld_probs: list[np.ndarray] = []
    their_checks: dict[str, list[dict[str, Any]]] = {name: [] for name in others}
    for start in range(0, len(items), BLOCK):
        block = items[start : start + BLOCK]
        for name in _rotate(list(lat), start // BLOCK):
            if name in others:
                checks = others[name].checks(block)
                their_checks[name].extend(checks)
                lat[name].extend(c["ms"] for c in checks)
                continue
            for item in block:
                if name == LD:
                    ms, probs = timed_lettuce(ld, item)
                    ld_probs.append(probs)
                    lat[name].append(ms)
                else:
                    lat[name].append(await timed_ours(ours[name], item))
    return lat, ld_probs, their_checks


def print_latency(lat: dict[str, list[float]]) -> None:
    """The first pass's latency per runtime and its ratio to LettuceDetect's (``--latency-only``)."""
    base = statistics.median(lat[LD]), percentile(lat[LD], 95), statistics.fmean(lat[LD])
    print()
    print("latency at 1 caller (first pass over the inputs; x: LettuceDetect's / ours)")
    print(f"{'detector':<19} {'p50 ms':>7} {'p95 ms':>7} {'mean ms':>8} {'p50 x':>6} {'p95 x':>6} {'mean x':>6}")
    for name, values in lat.items():
        own = statistics.median(values), percentile(values, 95), statistics.fmean(values)
        print(f"{name:<19} {own[0]:>7.1f} {own[1]:>7.1f} {own[2]:>8.1f} {base[0] / own[0]:>6.2f} "
              f"{base[1] / own[1]:>6.2f} {base[2] / own[2]:>6.2f}")


def spread(values: Sequence[float]) -> str:
    """Median [min-max] of a ratio over the repeats."""
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def engines(dirs: dict[str, Path], variants: Sequence[str] = VARIANTS) -> dict[str, DetectorEngine]:
    # The in-process default (src/truthlens/gateway/policy/config.py): two runs in flight, the cores
    # split between them, a lone row on every core.
    default = DetectorSettings(provider="cpu", max_in_flight=2)
    # The previous setting: the same split, every row on its half of the cores.
    split = DetectorSettings(provider="cpu", max_in_flight=2, intra_op_threads=max(1, usable_cores() // 2))
    out: dict[str, DetectorEngine] = {}
    for name, settings, directory in (
        ("onnx fp32", default, dirs["fp32"]),
        ("onnx int8 unfused", default, dirs.get("unfused")),
        ("onnx int8 split", split, dirs["int8"]),
        ("onnx int8", default, dirs["int8"]),
        ("onnx int8 blockwise", default, dirs.get("blockwise")),
    ):
        # fp32 always: the checkpoint check and the agreement tables read it.
        if directory is not None and (name in ("onnx fp32", "onnx int8")
                                      or name.removeprefix("onnx int8 ") in variants):
            out[name] = _engine(settings, directory)
    return out


def _engine(settings: DetectorSettings, directory: Path) -> DetectorEngine:
    engine = create_detector(DetectorSettings(**{**_fields(settings), "model_dir": str(directory)}))
    assert isinstance(engine, DetectorEngine)
    return engine


async def run(args: argparse.Namespace) -> None:
    import torch

    threads = args.threads or usable_cores()
    torch.set_num_threads(threads)
    items = load_inputs(args.inputs, args.n)
    variants = tuple(args.variants.split(","))
    with tempfile.TemporaryDirectory(prefix="truthlens-bench-") as tmp, ExitStack() as stack:
        dirs = export_dirs(args.hf_model, args.onnx_model, args.onnx_int8_model, Path(tmp), variants)
        fp32_dir, int8_dir = dirs["fp32"], dirs["int8"]
        manifest = load_manifest(fp32_dir)
        ours = engines(dirs, variants)
        # Another build (--beside): its code and shipped model in a child process, timed in turns.
        others = {f"build {c}": stack.enter_context(child_at(c)) for c in args.beside}
        ld = lettuce(args.hf_model, manifest.max_length, segment_ids=False)
        ld_seg = lettuce(args.hf_model, manifest.max_length, segment_ids=True)

        encoder = TextEncoder(manifest.tokenizer_path)
        tokens = [encoder.count(build_prompt(i.context, i.question)) + encoder.count(i.answer) for i in items]
        await same_checkpoint(args.hf_model, fp32_dir, ours["onnx fp32"], ld_seg, items, tokens, manifest.max_length)
        print(f"checkpoint {args.hf_model} ({manifest.source.get('architecture')}), window {manifest.max_length}, "
              f"{len(items)} inputs from {args.inputs} (prompt + answer tokens: p50 {statistics.median(tokens):.0f}), "
              f"CPU with {usable_cores()} cores, LettuceDetect on {threads} torch threads (shared by its callers); "
              f"ours: whole detect (rows, fact checks, spans) with the in-process defaults unless named")
        # warm-up every runtime (these three inputs come last in the timed first pass)
        for item in items[-3:]:
            lettuce_probs(ld, item)
            for engine in ours.values():
                await engine.detect(item, threshold=0.5)

        for child in others.values():
            child.checks(items[-3:])
        # fp32 is timed when named in --variants (it always runs for the checkpoint and agreement checks).
        timed = {k: v for k, v in ours.items() if k != "onnx fp32" or "fp32" in variants}
        lat, ld_probs, their_checks = await interleaved(timed, ld, items, others)
        if args.latency_only:
            print_latency(lat)
            await beside_builds(ours["onnx int8"], items, their_checks)
            for engine in ours.values():
                await engine.close()
            return
        n = args.concurrency
        tput: dict[tuple[str, int], list[float]] = {(name, c): [] for name in lat for c in (1, n)}
        for repeat in range(args.repeats):
            for callers in (1, n):
                for name in _rotate(list(lat), repeat):
                    if name == LD:
                        rate = throughput_lettuce(ld, items, callers, threads)
                    elif name in others:
                        rate = others[name].throughput(items, callers)
                    else:
                        rate = await throughput_ours(ours[name], items, callers)
                    tput[name, callers].append(rate)

        base_p50, base_p95, base_mean = (
            statistics.median(lat[LD]), percentile(lat[LD], 95), statistics.fmean(lat[LD])
        )
        print()
        print(f"latency at 1 caller (first pass over the inputs), checks/s over {args.repeats} repeats "
              f"(median [min-max] of each repeat's ratio)")
        print(f"{'detector':<19} {'p50 ms':>7} {'p95 ms':>7} {'mean ms':>8} {'p50 x':>6} {'p95 x':>6} "
              f"{'mean x':>6} {'checks/s @1':>11} {'x @1':>17} {f'checks/s @{n}':>11} {f'x @{n}':>17} "
              f"{f'@{n} / @1':>17}")
        for name, values in lat.items():
            p50, p95, mean = statistics.median(values), percentile(values, 95), statistics.fmean(values)
            one, many = tput[name, 1], tput[name, n]
            x1 = [a / b for a, b in zip(one, tput[LD, 1], strict=True)]
            xn = [a / b for a, b in zip(many, tput[LD, n], strict=True)]
            scale = [b / a for a, b in zip(one, many, strict=True)]
            print(f"{name:<19} {p50:>7.1f} {p95:>7.1f} {mean:>8.1f} {base_p50 / p50:>6.2f} {base_p95 / p95:>6.2f} "
                  f"{base_mean / mean:>6.2f} {statistics.median(one):>11.2f} {spread(x1):>17} "
                  f"{statistics.median(many):>11.2f} {spread(xn):>17} {spread(scale):>17}")
        print("(x = speed-up over LettuceDetect: its latency / ours, our checks/s / its; checks/s passes see "
              "contexts already checked once)")

        await beside_builds(ours["onnx int8"], items, their_checks)
        ld_seg_probs = [lettuce_probs(ld_seg, i) for i in items]
        probs = {
            name: await our_probs(ours[name], items)
            for name in ("onnx fp32", "onnx int8 unfused", "onnx int8", "onnx int8 blockwise") if name in ours
        }
        print()
        print(f"{'pair':<44} {'tokens':>7} {'token agree':>12} {'mean |dp|':>10} {'verdict agree':>14} {'skipped':>8}")
        for name, a, b in (
            ("onnx fp32 vs lettucedetect (as shipped)", probs["onnx fp32"], ld_probs),
            ("onnx fp32 vs lettucedetect + segment ids", probs["onnx fp32"], ld_seg_probs),
            ("onnx int8 vs lettucedetect + segment ids", probs["onnx int8"], ld_seg_probs),
            ("onnx int8 vs onnx fp32", probs["onnx int8"], probs["onnx fp32"]),
            ("onnx int8 vs onnx int8 unfused", probs["onnx int8"], probs.get("onnx int8 unfused")),
            ("onnx int8 blockwise vs onnx fp32", probs.get("onnx int8 blockwise"), probs["onnx fp32"]),
        ):
            if a is None or b is None:
                continue
            g = agreement(a, b)
            print(f"{name:<44} {g.tokens:>7} {g.token_agree:>12.2%} {g.mean_abs_diff:>10.4f} "
                  f"{g.example_agree:>14.2%} {g.skipped:>8}")
        await whole_check_agreement(ours, items)
        await rag_inputs(args, ld, int8_dir)
        if args.long:
            await long_contexts(ours["onnx int8"], encoder)
        for engine in ours.values():
            await engine.close()


async def same_checkpoint(
    hf: Path, fp32_dir: Path, ours: DetectorEngine, ld_seg: Any, items: Sequence[DetectionInput],
    tokens: Sequence[int], max_length: int,
) -> None:
    """Refuse an fp32 graph that is not this checkpoint's export: every agreement row would then
    compare two different models (and the int8 rows inherit the mismatch)."""
    fits = [i for i, n in zip(items, tokens, strict=True) if n + 3 <= max_length][:5]
    probs = await our_probs(ours, fits)
    worst = max(
        float(np.max(np.abs(a - lettuce_probs(ld_seg, i)), initial=0.0)) for a, i in zip(probs, fits, strict=True)
    )
    if worst > SAME_MODEL_TOLERANCE:
        raise SystemExit(
            f"{fp32_dir} is not an export of {hf}: token probabilities differ by up to {worst:.3f} from the "
            f"checkpoint's own (tolerance {SAME_MODEL_TOLERANCE}); pass the fp32 export of --hf-model, or none"
        )


async def whole_check_agreement(ours: dict[str, DetectorEngine], items: Sequence[DetectionInput]) -> None:
    """Verdicts (detected / clean at the calibrated thresholds) and spans of the whole check."""
    checks = {name: [await ours[name].detect(i, threshold=0.5) for i in items] for name in ours
              if name in ("onnx int8", "onnx fp32", "onnx int8 split", "onnx int8 blockwise")}
    print()
    print(f"{'whole check (verdict at threshold 0.5, spans)':<44} {'verdict agree':>14} {'+ same spans':>13}")
    for name, other in (("onnx int8", "onnx fp32"), ("onnx int8", "onnx int8 split"),
                        ("onnx int8 blockwise", "onnx fp32")):
        if name not in checks or other not in checks:
            continue
        pairs = [same_check(a, b) for a, b in zip(checks[name], checks[other], strict=True)]
        print(f"{name + ' vs ' + other:<44} {sum(v for v, _ in pairs) / len(pairs):>14.2%} "
              f"{sum(s for _, s in pairs) / len(pairs):>13.2%}")


async def beside_builds(
    ours: DetectorEngine, items: Sequence[DetectionInput], theirs: dict[str, list[dict[str, Any]]]
) -> None:
    """This build's whole check ("onnx int8" with the in-process defaults: the shipped model when
    ``--onnx-int8-model`` names it) against each other build's shipped defaults, per item."""
    if not theirs:
        return
    # Each build judges at its own routes' default (another build's child prints its verdicts so).
    checks = [await ours.detect(i, threshold=DEFAULT_THRESHOLD) for i in items]
    print()
    print(f"{f'this build vs another (shipped defaults: {DEFAULT_THRESHOLD:g} here)':<52} {'verdict agree':>14} "
          f"{'+ same spans':>13} "
          f"{'rows':>11} {'flagged':>9}")
    for name, other in theirs.items():
        same = [(a.status == b["status"], a.status == b["status"] and [(s.start, s.end) for s in a.spans]
                 == [tuple(x) for x in b["spans"]]) for a, b in zip(checks, other, strict=True)]
        rows = f"{statistics.fmean(c.chunks for c in checks):.2f}/{statistics.fmean(c['rows'] for c in other):.2f}"
        flagged = f"{sum(c.status == 'detected' for c in checks)}/{sum(c['status'] == 'detected' for c in other)}"
        print(f"{'onnx int8 vs ' + name:<52} {sum(v for v, _ in same) / len(same):>14.2%} "
              f"{sum(s for _, s in same) / len(same):>13.2%} {rows:>11} {flagged:>9}")
    print("(rows: model rows per check, this build / the other; flagged: answers detected, the same order)")


async def rag_inputs(args: argparse.Namespace, ld: Any, int8_dir: Path) -> None:
    """The whole check vs LettuceDetect per item on ~400-token RAG inputs, each context new."""
    from bench.detector_check_latency import TARGET_TOKENS, inputs

    if args.rag_n <= 0:
        return
    if not ragtruth.available(args.ragtruth):
        print(f"\n(no RAGTruth at {args.ragtruth}: the ~400-token RAG comparison is skipped)")
        return
    items = inputs(args.rag_n, args.ragtruth, halueval.DEFAULT_DIR)
    # A new engine: the main inputs may share these passages, and its embedder must not know them.
    engine = _engine(DetectorSettings(provider="cpu", max_in_flight=2), int8_dir)
    await engine.detect(DetectionInput(("A warm-up passage.",), "Warm up?", "It warms up."), threshold=0.5)
    lat, _, _ = await interleaved({"onnx int8": engine}, ld, items)
    rows = [(await engine.detect(i, threshold=0.5)).chunks for i in items]
    await engine.close()
    ours, theirs = lat["onnx int8"], lat[LD]
    print()
    print(f"whole check per item, {len(items)} RAG inputs (RAGTruth QA training half, context "
          f"{TARGET_TOKENS[0]}-{TARGET_TOKENS[1]} tokens, three-sentence answer; {sum(rows) / len(rows):.2f} "
          f"rows per item), each context's first check, 1 caller:")
    print(f"  lettucedetect mean {statistics.fmean(theirs):.1f} ms (p50 {statistics.median(theirs):.1f}), "
          f"onnx int8 mean {statistics.fmean(ours):.1f} ms (p50 {statistics.median(ours):.1f}): "
          f"{statistics.fmean(theirs) / statistics.fmean(ours):.2f}x per item "
          f"(p50 {statistics.median(theirs) / statistics.median(ours):.2f}x)")


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
    parser.add_argument("--repeats", type=int, default=3, help="checks/s passes per runtime and caller count")
    parser.add_argument("--threads", type=int, default=0, help="torch threads for LettuceDetect (0: all cores)")
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR,
                        help="RAGTruth folder for the ~400-token RAG inputs")
    parser.add_argument("--rag-n", type=int, default=60, help="~400-token RAG inputs (as many as there are)")
    parser.add_argument("--long", action="store_true", help="also time a new 2k- and 8k-token context")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="our variants timed, comma-separated: fp32, unfused, split, int8, blockwise (int8 "
                             "always; fp32 always runs for the agreement tables)")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the first pass's latency (and --beside's verdicts): no checks/s, no agreement "
                             "tables")
    parser.add_argument("--beside", action="append", default=[], metavar="COMMIT",
                        help="also time this commit's build (its code and shipped model) in turns, and compare "
                             "its verdicts with this build's (repeatable)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
