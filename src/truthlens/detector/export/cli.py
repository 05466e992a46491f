"""``truthlens export``: the command line over :mod:`~truthlens.detector.export.checkpoint` (a
checkpoint → model directory, or an existing fp32 model re-optimised) and
:mod:`~truthlens.detector.export.triton_repo` (a model directory → Triton model repository)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from truthlens.detector.export.checkpoint import export_model, optimize_onnx
from truthlens.detector.export.onnx_graph import ExportError, GraphShape, Quantize


def main(argv: Sequence[str] | None = None) -> int:
    """``truthlens export --checkpoint DIR --out DIR [--int8 | --int8-blockwise] [--no-optimize] [--opset N]
    [--triton-repo DIR]``, ``truthlens export --optimize-onnx MODEL --out DIR [--keep-fp32]`` to re-optimise
    an existing fp32 model, or ``truthlens export --triton-repo DIR [--model DIR]`` for an existing model directory."""
    parser = argparse.ArgumentParser(
        prog="truthlens export", description="Export a token-classification checkpoint to a detector model directory."
    )
    parser.add_argument("--checkpoint", type=Path, help="Hugging Face checkpoint directory")
    parser.add_argument("--out", type=Path, help="model directory to write")
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument("--int8", action="store_true", help="dynamic int8 quantisation (per channel): fastest")
    precision.add_argument(
        "--int8-blockwise", action="store_true",
        help="int8 in blocks of 32 for weights and activations: ~99%% of the float verdicts, ~1.6x int8's time",
    )
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--dynamo", action="store_true", help="use the dynamo exporter (opset >= 18)")
    parser.add_argument(
        "--max-length", type=int, default=512, help="window recorded in the manifest (capped by the model)"
    )
    parser.add_argument("--no-verify", action="store_true", help="skip the ONNX-vs-torch check")
    graph = parser.add_argument_group("graph optimisation (ONNX Runtime's transformer optimizer, before int8)")
    graph.add_argument("--no-optimize", action="store_true", help="int8 export without fused attention")
    graph.add_argument("--optimize", action="store_true", help="fuse the fp32 export as well")
    graph.add_argument("--optimize-onnx", type=Path, default=None, metavar="MODEL",
                       help="re-optimise an existing fp32 model.onnx (or its model directory) into --out")
    graph.add_argument("--keep-fp32", action="store_true", help="with --optimize-onnx: do not quantise to int8")
    graph.add_argument("--num-heads", type=int, default=0,
                       help="with --optimize-onnx: attention heads (0: the manifest's, else detect)")
    graph.add_argument("--hidden-size", type=int, default=0,
                       help="with --optimize-onnx: hidden size (0: the manifest's, else detect)")
    triton = parser.add_argument_group("Triton model repository (src/truthlens/detector/export/triton_repo.py)")
    triton.add_argument("--triton-repo", type=Path, help="also write a Triton model repository here")
    triton.add_argument("--model", default=None,
                        help="without --checkpoint: the model directory to serve (default: the shipped model)")
    triton.add_argument("--triton-max-batch", type=int, default=32, help="max_batch_size of each model")
    triton.add_argument("--triton-queue-delay-us", type=int, default=500, help="dynamic batching queue delay")
    triton.add_argument("--triton-kind", choices=("gpu", "cpu"), default="gpu", help="instance group kind")
    triton.add_argument("--triton-instances", type=int, default=1, help="model instances per device")
    triton.add_argument("--triton-fp16", action="store_true", help="TensorRT execution accelerator in fp16 (GPU)")
    triton.add_argument("--no-embedder", action="store_true", help="leave the relevance embedder out")
    args = parser.parse_args(argv)
    if args.optimize_onnx is not None:
        if args.out is None or args.checkpoint is not None:
            parser.error("--optimize-onnx needs --out (and no --checkpoint)")
        try:
            report = optimize_onnx(
                args.optimize_onnx, args.out,
                quantize="none" if args.keep_fp32 else _chosen_quantize(args, default="int8"),
                shape=GraphShape(args.num_heads, args.hidden_size), verify=not args.no_verify,
            )
        except (ExportError, OSError, ValueError) as exc:
            print(f"optimisation failed: {exc}", file=sys.stderr)
            return 1
        print(report.to_json())
        return 0
    if args.checkpoint is None and args.triton_repo is None:
        parser.error("--checkpoint and --out are required (or --triton-repo alone, for an existing model)")
    if args.checkpoint is not None and args.out is None:
        parser.error("--checkpoint needs --out")
    model_dir = args.model
    if args.checkpoint is not None:
        try:
            report = export_model(
                args.checkpoint, args.out, quantize=_chosen_quantize(args, default="none"), opset=args.opset,
                max_length=args.max_length, verify=not args.no_verify, dynamo=args.dynamo,
                optimize=False if args.no_optimize else (True if args.optimize else None),
            )
        except (ExportError, OSError) as exc:
            print(f"export failed: {exc}", file=sys.stderr)
            return 1
        print(report.to_json())
        model_dir = str(args.out)
    if args.triton_repo is not None:
        return _export_triton_repo(args, model_dir)
    return 0


def _chosen_quantize(args: argparse.Namespace, *, default: Quantize) -> Quantize:
    """The int8 form the flags name, else ``default`` (a checkpoint exports fp32, an
    ``--optimize-onnx`` run dynamic int8)."""
    if args.int8_blockwise:
        return "int8-blockwise"
    return "int8" if args.int8 else default


def _export_triton_repo(args: argparse.Namespace, model_dir: str | None) -> int:
    from truthlens.detector.export.triton_repo import RepoOptions, write_triton_repo
    from truthlens.detector.types import DetectorError

    options = RepoOptions(
        max_batch_size=args.triton_max_batch,
        preferred_batch_sizes=tuple(b for b in (8, 16, 32, 64) if b <= args.triton_max_batch),
        max_queue_delay_us=args.triton_queue_delay_us,
        kind=args.triton_kind,
        instances=args.triton_instances,
        tensorrt_fp16=args.triton_fp16,
        embedder=not args.no_embedder,
    )
    try:
        written = write_triton_repo(model_dir, args.triton_repo, options)
    except (DetectorError, ValueError, OSError) as exc:
        print(f"triton repository export failed: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"triton_repo": str(args.triton_repo), "models": [p.name for p in written]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
