"""ONNX Runtime (CUDA provider) vs torch on the same GPU, ModernBERT-base-sized detector.

Self-contained: builds a ModernBERT-base-sized ``ModernBertForTokenClassification`` with
random weights from a config in code (no download), exports it with ``torch.onnx`` to a
temporary directory, then times both runtimes on the same device, interleaved, at
512 / 2048 / 4096 tokens (batch 1 and an optional larger batch), and prints one table
with p50/p95 latencies, the torch/ONNX ratio and the largest probability difference.
Needs only torch, transformers and onnxruntime-gpu (onnxruntime for ``--cpu``).

    python -m bench.detector_gpu                   # on a GPU machine
    python -m bench.detector_gpu --cpu --tiny      # smoke test without a GPU (tiny model)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from transformers import ModernBertConfig, ModernBertForTokenClassification


class LogitsOnly(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).logits


def build_model(tiny: bool) -> ModernBertForTokenClassification:
    torch.manual_seed(0)
    if tiny:
        config = ModernBertConfig(
            vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
            num_attention_heads=4, local_attention=32, max_position_embeddings=1024, num_labels=2,
            pad_token_id=0, eos_token_id=1, bos_token_id=2, cls_token_id=3, sep_token_id=4,
        )
    else:
        # ModernBERT-base: 22 layers, hidden 768, 12 heads, GLU 1152, local window 128,
        # global attention every 3rd layer, 8192 positions (~149M parameters).
        config = ModernBertConfig(
            vocab_size=50368, hidden_size=768, intermediate_size=1152, num_hidden_layers=22,
            num_attention_heads=12, local_attention=128, global_attn_every_n_layers=3,
            max_position_embeddings=8192, num_labels=2,
        )
    config._attn_implementation = "sdpa"  # flash-attention paths cannot be exported
    return ModernBertForTokenClassification(config).eval()


def export(model: torch.nn.Module, path: Path, vocab: int) -> None:
    ids = torch.randint(5, vocab, (2, 96))
    mask = torch.ones_like(ids)
    mask[1, 80:] = 0
    with warnings.catch_warnings():  # tracer warnings about data-dependent branches are expected
        warnings.simplefilter("ignore")
        _export(model, ids, mask, path)


def _export(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, path: Path) -> None:
    torch.onnx.export(
        LogitsOnly(model), (ids, mask), str(path),
        input_names=["input_ids", "attention_mask"], output_names=["logits"],
        dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "logits")},
        opset_version=17, dynamo=False,
    )


def timeit(fn: Callable[[], np.ndarray], warmup: int, iters: int) -> tuple[list[float], np.ndarray]:
    out = fn()
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(iters):
        started = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - started) * 1000)
    return times, out


def probs(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True))[..., 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="run both on CPU (smoke test without a GPU)")
    parser.add_argument("--tiny", action="store_true", help="tiny ModernBERT instead of base size")
    parser.add_argument("--lengths", type=int, nargs="+", default=None, help="default 512 2048 4096 (tiny: 64 128 256)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument(
        "--tf32", action="store_true", help="allow TF32 matmuls in both runtimes (default: off in both)"
    )
    parser.add_argument("--torch-only", action="store_true",
                        help="time torch alone (where onnxruntime-gpu cannot be installed); ONNX columns show '-'")
    args = parser.parse_args()
    lengths = args.lengths or ([64, 128, 256] if args.tiny else [512, 2048, 4096])

    if args.cpu:
        device, providers = torch.device("cpu"), [("CPUExecutionProvider", {})]
    else:
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device for torch; use --cpu for a smoke test")
        if not args.torch_only and "CUDAExecutionProvider" not in ort.get_available_providers():
            raise SystemExit(
                f"onnxruntime has no CUDAExecutionProvider ({ort.get_available_providers()}); install onnxruntime-gpu"
            )
        device = torch.device("cuda")
        providers = [("CUDAExecutionProvider", {"use_tf32": int(args.tf32)}), ("CPUExecutionProvider", {})]
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32

    model = build_model(args.tiny)
    params = sum(p.numel() for p in model.parameters())
    with tempfile.TemporaryDirectory(prefix="truthlens-gpu-bench-") as tmp:
        path = Path(tmp) / "model.onnx"
        started = time.perf_counter()
        session: ort.InferenceSession | None = None
        used = "not used"
        if not args.torch_only:
            export(model, path, model.config.vocab_size)
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(str(path), options, providers=providers)
            used = session.get_providers()[0]
        export_s = time.perf_counter() - started
        if session is not None and not args.cpu and used != "CUDAExecutionProvider":
            raise SystemExit(f"onnxruntime fell back to {used}; CUDA libraries missing?")
        model = model.to(device)
        name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
        print(f"ModernBertForTokenClassification {params / 1e6:.1f}M params, random weights, fp32, "
              f"export {export_s:.0f}s; device {name}; onnxruntime {ort.__version__} {used}; "
              f"torch {torch.__version__} (sdpa); tf32 {'on' if args.tf32 else 'off'}; "
              f"{args.iters} timed runs after {args.warmup} warm-up")
        print(f"{'batch':>5} {'tokens':>6} {'torch p50':>10} {'torch p95':>10} {'onnx p50':>9} {'onnx p95':>9} "
              f"{'torch/onnx p50':>15} {'max |dp|':>9}")
        rng = np.random.default_rng(0)
        for batch in args.batches:
            for length in lengths:
                ids = rng.integers(5, model.config.vocab_size, size=(batch, length), dtype=np.int64)
                mask = np.ones_like(ids)
                ids_t, mask_t = torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)

                def run_torch(ids_t: torch.Tensor = ids_t, mask_t: torch.Tensor = mask_t) -> np.ndarray:
                    with torch.inference_mode():
                        out = model(input_ids=ids_t, attention_mask=mask_t).logits
                    return out.float().cpu().numpy()  # .cpu() synchronises the device

                def run_onnx(ids: np.ndarray = ids, mask: np.ndarray = mask) -> np.ndarray:
                    assert session is not None
                    return session.run(["logits"], {"input_ids": ids, "attention_mask": mask})[0]

                try:
                    t_times, t_out = timeit(run_torch, args.warmup, args.iters)
                    if session is None:
                        print(f"{batch:>5} {length:>6} {statistics.median(t_times):>10.2f} "
                              f"{np.percentile(t_times, 95):>10.2f} {'-':>9} {'-':>9} {'-':>15} {'-':>9}")
                        continue
                    o_times, o_out = timeit(run_onnx, args.warmup, args.iters)
                except (RuntimeError, MemoryError) as exc:  # out of memory at large batch x length
                    print(f"{batch:>5} {length:>6}  skipped: {type(exc).__name__}: {str(exc)[:80]}")
                    continue
                t50, o50 = statistics.median(t_times), statistics.median(o_times)
                diff = float(np.abs(probs(t_out) - probs(o_out)).max())
                print(f"{batch:>5} {length:>6} {t50:>10.2f} {np.percentile(t_times, 95):>10.2f} {o50:>9.2f} "
                      f"{np.percentile(o_times, 95):>9.2f} {t50 / o50:>15.2f} {diff:>9.1e}")
        print("(torch/onnx > 1: ONNX Runtime is faster)")


if __name__ == "__main__":
    main()
