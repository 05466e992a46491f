"""Detector model runs by execution provider: TensorRT and CUDA (where present) vs CPU, one command.

Two models: the shipped detector (its model directory, default the built-in one; its window
is 512 tokens) and a ModernBERT-base-shaped token classifier with random weights, built from a
config in code (no download) and exported with ``torch.onnx`` to a temporary directory. For
each model, provider, length (512 and 4,096 tokens, capped by the model's window) and batch
size it prints p50 / p95 ms per run, rows/s (a row is one check of a short input) and the
speed-up over CPU. It first prints the providers onnxruntime offers; without a GPU it runs on
CPU alone (a smoke test of the same code path), CPU at batch 1 unless ``--cpu-batches``.

    python -m bench.detector_gpu                       # every provider found, both models
    python -m bench.detector_gpu --tiny                # tiny ModernBERT instead of base size
    python -m bench.detector_gpu --model DIR --no-modernbert

On a GPU machine: ``pip install onnxruntime-gpu`` (in place of ``onnxruntime``) and the
``export`` extra (torch, transformers) for the ModernBERT model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from truthlens.detector.manifest import resolve_model_dir

TRT, CUDA, CPU = "TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"


@dataclass(frozen=True, slots=True)
class Model:
    name: str
    path: Path
    max_length: int
    vocab: int


def shipped(model_dir: str | None) -> Model:
    directory = resolve_model_dir(model_dir)
    manifest = json.loads((directory / "manifest.json").read_text())
    vocab = len(json.loads((directory / "tokenizer.json").read_text())["model"]["vocab"])
    arch = str(manifest.get("source", {}).get("architecture", "?")).replace("ForTokenClassification", "")
    quantization = "int8" if "int8" in str(manifest.get("quantization")) else "fp32"
    label = f"shipped ({arch}, {quantization})"
    return Model(label, directory / "model.onnx", int(manifest["max_length"]), vocab)


def modernbert(tmp: Path, tiny: bool) -> Model:
    """A ModernBERT-base-shaped classifier (22 layers, hidden 768, 12 heads, 8,192 positions;
    ~149M parameters) with random weights, exported to ``tmp``."""
    import torch
    from transformers import ModernBertConfig, ModernBertForTokenClassification

    torch.manual_seed(0)
    if tiny:
        config = ModernBertConfig(
            vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
            local_attention=32, max_position_embeddings=8192, num_labels=2,
            pad_token_id=0, eos_token_id=1, bos_token_id=2, cls_token_id=3, sep_token_id=4,
        )
    else:
        config = ModernBertConfig(
            vocab_size=50368, hidden_size=768, intermediate_size=1152, num_hidden_layers=22, num_attention_heads=12,
            local_attention=128, global_attn_every_n_layers=3, max_position_embeddings=8192, num_labels=2,
        )
    config._attn_implementation = "sdpa"  # flash-attention paths cannot be exported
    model = ModernBertForTokenClassification(config).eval()

    class LogitsOnly(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=input_ids, attention_mask=attention_mask).logits

    ids = torch.randint(5, config.vocab_size, (2, 96))
    mask = torch.ones_like(ids)
    mask[1, 80:] = 0
    path = tmp / "modernbert.onnx"
    with warnings.catch_warnings():  # tracer warnings about data-dependent branches are expected
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LogitsOnly().eval(), (ids, mask), str(path), input_names=["input_ids", "attention_mask"],
            output_names=["logits"], opset_version=17, dynamo=False,
            dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "logits")},
        )
    params = sum(p.numel() for p in model.parameters()) / 1e6
    return Model(f"ModernBERT-{'tiny' if tiny else 'base'} shape ({params:.1f}M, fp32)", path, 8192,
                 config.vocab_size)


def session(model: Model, provider: str, tmp: Path, cpu_threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    if provider == CPU and cpu_threads > 0:
        options.intra_op_num_threads = cpu_threads
    providers: list[Any] = [provider] if provider == CPU else [provider, CPU]
    if provider == TRT:
        cache = tmp / "trt-cache"
        cache.mkdir(exist_ok=True)
        providers = [(TRT, {"trt_engine_cache_enable": True, "trt_engine_cache_path": str(cache)}), CUDA, CPU]
    made = ort.InferenceSession(str(model.path), options, providers=providers)
    if made.get_providers()[0] != provider:
        raise RuntimeError(f"onnxruntime fell back to {made.get_providers()[0]} (libraries missing?)")
    return made


def time_runs(sess: ort.InferenceSession, feed: dict[str, np.ndarray], warmup: int, iters: int) -> list[float]:
    for _ in range(warmup):
        sess.run(None, feed)
    times = []
    for _ in range(iters):
        started = time.perf_counter()
        sess.run(None, feed)  # outputs come back to host memory: the device is synchronised
        times.append((time.perf_counter() - started) * 1000)
    return times


def feed_for(sess: ort.InferenceSession, vocab: int, batch: int, length: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    ids = rng.integers(1000 if vocab > 2000 else 5, vocab, size=(batch, length), dtype=np.int64)
    tensors = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    return {i.name: tensors[i.name] for i in sess.get_inputs()}


def measure(models: Sequence[Model], providers: Sequence[str], args: argparse.Namespace, tmp: Path) -> None:
    print(f"{'model':<44} {'provider':<10} {'batch':>5} {'tokens':>6} {'p50 ms':>9} {'p95 ms':>9} "
          f"{'rows/s':>8} {'x CPU':>6}")
    for model in models:
        lengths = [n for n in args.lengths if n <= model.max_length] or [model.max_length]
        cpu_rows: dict[tuple[int, int], float] = {}  # (batch, length) -> CPU rows/s
        for provider in [p for p in providers if p == CPU] + [p for p in providers if p != CPU]:
            short = provider.replace("ExecutionProvider", "")
            try:
                sess = session(model, provider, tmp, args.cpu_threads)
            except Exception as exc:  # a provider whose libraries are missing: say so, go on
                print(f"{model.name:<44} {short:<10} skipped: {str(exc)[:100]}")
                continue
            batches = args.cpu_batches if provider == CPU else args.batches
            for batch in batches:
                for length in lengths:
                    iters = args.cpu_iters if provider == CPU else args.iters
                    try:
                        times = time_runs(sess, feed_for(sess, model.vocab, batch, length), args.warmup, iters)
                    except Exception as exc:  # out of memory at a large batch x length
                        print(f"{model.name:<44} {short:<10} {batch:>5} {length:>6}  skipped: {str(exc)[:80]}")
                        continue
                    p50 = statistics.median(times)
                    rows = batch * 1000 / p50
                    if provider == CPU:
                        cpu_rows[(batch, length)] = rows
                    base = cpu_rows.get((batch, length)) or cpu_rows.get((1, length))
                    speedup = "-" if base is None else f"{rows / base:.2f}"
                    print(f"{model.name:<44} {short:<10} {batch:>5} {length:>6} {p50:>9.2f} "
                          f"{float(np.percentile(times, 95)):>9.2f} {rows:>8.1f} {speedup:>6}")
    print("(rows/s = batch x 1000 / p50; x CPU = rows/s over CPU's at the same batch, else at batch 1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="detector model directory (default: the shipped model)")
    parser.add_argument("--no-modernbert", action="store_true", help="leave the ModernBERT-base-shaped model out")
    parser.add_argument("--tiny", action="store_true", help="tiny ModernBERT instead of base size (smoke test)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 4096])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8], help="batch sizes on a GPU")
    parser.add_argument("--cpu-batches", type=int, nargs="+", default=[1], help="batch sizes on CPU")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--cpu-iters", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--cpu-threads", type=int, default=0, help="CPU intra-op threads (0: all cores)")
    parser.add_argument("--providers", nargs="+", default=None, help="default: TensorRT, CUDA, CPU where offered")
    args = parser.parse_args()

    offered = ort.get_available_providers()
    providers = args.providers or [p for p in (TRT, CUDA, CPU) if p in offered]
    print(f"onnxruntime {ort.__version__}; providers offered: {', '.join(offered)}; measuring: {', '.join(providers)}")
    if CUDA not in offered:
        print("no CUDA provider here (install onnxruntime-gpu on a GPU machine): CPU only")
    with tempfile.TemporaryDirectory(prefix="truthlens-gpu-bench-") as tmp:
        models = [shipped(args.model)]
        if not args.no_modernbert:
            started = time.perf_counter()
            models.append(modernbert(Path(tmp), args.tiny))
            print(f"exported {models[-1].name} in {time.perf_counter() - started:.0f} s")
        measure(models, providers, args, Path(tmp))


if __name__ == "__main__":
    main()
