"""Static (calibrated) int8 against the shipped dynamic int8 graph: time per row and agreement with fp32.

Dynamic int8 (the shipped graph) computes each activation's scale while it runs; static int8
fixes the scales beforehand from calibration rows, which saves that work and is the form the
CPU's int8 kernels are fastest with in principle. This bench measures whether it pays here: it
quantises an fp32 export of the shipped checkpoint (``--fp32``: a model directory, e.g.
``truthlens export --checkpoint training/output/hf-shipped --out DIR --no-embedder``) with ONNX
Runtime's static quantiser (QDQ, per-channel int8 weights, uint8 activations, every MatMul;
calibrated on the rows of the first ``--calibrate`` inputs, min-max ranges: the histogram
methods of ONNX Runtime 1.32 need rows of one length), then runs the next ``--n`` inputs'
rows (the whole check's own rows, :func:`bench.onnx_session_options.item_rows`; RAGTruth QA's
training half) through the shipped graph, the static graph and fp32, taking turns per row on
every core, and prints each one's time and its agreement with fp32 (answer tokens over 0.5, and
each row's verdict: any answer token over 0.5).

    python -m bench.int8_static --fp32 DIR [--n 40] [--calibrate 24]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from bench.onnx_session_options import item_rows
from truthlens.detector.backends.onnx import answer_probs, pad_rows, usable_cores
from truthlens.detector.encoding import ModelRow

DEFAULT_MODEL = Path("src/truthlens/detector/default_model")
INPUTS = Path("training/output/ragtruth/ragtruth_qa.jsonl")


def quantise(fp32: Path, out: Path, calibration: list[ModelRow]) -> Path:
    """The static QDQ graph of ``fp32``, calibrated on ``calibration``."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Rows(CalibrationDataReader):  # type: ignore[misc]  (onnxruntime ships no types)
        def __init__(self) -> None:
            self.rows = iter(calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            row = next(self.rows, None)
            return None if row is None else pad_rows([row], 0)

    path = out / "static.onnx"
    quantize_static(
        str(fp32 / "model.onnx"), str(path), Rows(), quant_format=QuantFormat.QDQ, per_channel=True,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
        calibrate_method=CalibrationMethod.MinMax)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.int8_static", description=__doc__.splitlines()[0])
    parser.add_argument("--fp32", type=Path, required=True, help="fp32 model directory of the shipped checkpoint")
    parser.add_argument("--inputs", type=Path, default=INPUTS)
    parser.add_argument("--n", type=int, default=40, help="inputs timed (after the calibration ones)")
    parser.add_argument("--calibrate", type=int, default=24, help="inputs whose rows calibrate the scales")
    args = parser.parse_args(argv)

    items = item_rows(args.calibrate + args.n, args.inputs, DEFAULT_MODEL)
    calibration = [r for rows in items[: args.calibrate] for r in rows]
    timed = [r for rows in items[args.calibrate:] for r in rows]
    options = ort.SessionOptions()
    options.intra_op_num_threads = usable_cores()
    with tempfile.TemporaryDirectory(prefix="int8-static-") as tmp:
        static = quantise(args.fp32, Path(tmp), calibration)
        paths = {"shipped int8": DEFAULT_MODEL / "model.onnx", "static int8": static, "fp32": args.fp32 / "model.onnx"}
        sessions = {k: ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"])
                    for k, p in paths.items()}
        times: dict[str, list[float]] = {k: [] for k in sessions}
        probs: dict[str, list[np.ndarray]] = {k: [] for k in sessions}
        for row in timed:
            feed = pad_rows([row], 0)
            for name, session in sessions.items():
                started = time.perf_counter()
                logits = session.run(None, feed)[0]
                times[name].append(time.perf_counter() - started)
                probs[name].append(answer_probs(logits, [row], 1)[0])
    print(f"{len(timed)} rows of {args.n} inputs ({args.inputs}, after {args.calibrate} calibrating "
          f"{len(calibration)} rows), mean {statistics.mean(r.length for r in timed):.0f} tokens, "
          f"{usable_cores()} cores, the graphs taking turns per row")
    print(f"{'graph':<14} {'mean ms':>8} {'p50 ms':>8} {'x shipped':>10} {'tokens as fp32':>15} {'rows as fp32':>13}")
    base = statistics.mean(times["shipped int8"])
    for name in sessions:
        tokens = np.mean([((p > 0.5) == (q > 0.5)).mean() for p, q in zip(probs[name], probs["fp32"], strict=True)])
        rows = np.mean([(p.max() > 0.5) == (q.max() > 0.5) for p, q in zip(probs[name], probs["fp32"], strict=True)])
        print(f"{name:<14} {1000 * statistics.mean(times[name]):8.1f} {1000 * statistics.median(times[name]):8.1f} "
              f"{base / statistics.mean(times[name]):10.2f} {tokens:15.2%} {rows:13.2%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
