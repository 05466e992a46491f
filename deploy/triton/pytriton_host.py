"""Serve a detector model directory from a real Triton Inference Server, on loopback.

The ``nvidia-pytriton`` wheel (x86-64 Linux) ships the ``tritonserver`` binary with only the
Python backend, so the ONNX graph runs in ONNX Runtime inside a function bound to Triton:
Triton owns the v2 gRPC/HTTP endpoints, health, dynamic batching and metrics; the function
runs the batch. A production pool serves the repository ``truthlens export --triton-repo``
writes with Triton's own ONNX Runtime backend instead (deploy/k8s/triton.yaml).

Standalone on purpose (no project imports): pytriton pins numpy<2, so it usually lives in
its own virtual environment with ``onnxruntime``. Prints ``READY grpc=PORT http=PORT`` once
the model is ready and serves until SIGTERM/SIGINT.

    python deploy/triton/pytriton_host.py --model-dir DIR --grpc-port 8001 --http-port 8000
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import sysconfig
import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig


def _embed_this_python() -> None:
    """Triton's Python-backend stub embeds ``libpython3.X.so`` and imports this interpreter's
    standard library; the dynamic loader may find another build's libpython first (a
    distribution's 3.11.2 beside a 3.11.7 here), and a mismatched pair fails inside the stub.
    Putting this interpreter's own shared library first avoids that."""
    libdir = sysconfig.get_config_var("LIBDIR")
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and libdir:
        current = os.environ.get("LD_LIBRARY_PATH")
        os.environ["LD_LIBRARY_PATH"] = libdir + (":" + current if current else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", required=True, help="detector model directory (model.onnx, manifest.json)")
    ap.add_argument("--model-name", default="truthlens_detector")
    ap.add_argument("--grpc-port", type=int, default=8001)
    ap.add_argument("--http-port", type=int, default=8000)
    ap.add_argument("--metrics-port", type=int, default=8002)
    ap.add_argument("--max-batch-size", type=int, default=32)
    ap.add_argument("--queue-delay-us", type=int, default=500)
    # Off by default: the gateway already sends padded batches, and here Triton's batcher in
    # front of the Python backend made mixed-length requests in flight together several times
    # slower (measured: 1.3 vs 8.7 checks/s at 4 calls in flight). Triton's own ONNX Runtime
    # backend (the exported repository) batches only same-shape requests and has no such cost.
    ap.add_argument("--dynamic-batching", action="store_true", help="let Triton merge queued requests")
    ap.add_argument("--intra-op-threads", type=int, default=0)
    args = ap.parse_args(argv)

    directory = Path(args.model_dir)
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    options = ort.SessionOptions()
    if args.intra_op_threads > 0:
        options.intra_op_num_threads = args.intra_op_threads
    session = ort.InferenceSession(str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"])
    # pytriton may call the function from several threads; overlapping runs whose intra-op
    # threads all spin oversubscribe the cores (measured 8x slower at 4 calls in flight).
    # One run at a time per instance, as Triton's own ONNX Runtime backend does.
    one_at_a_time = threading.Lock()
    graph_inputs = [i.name for i in session.get_inputs()]
    output = session.get_outputs()[0].name
    labels = len(manifest["labels"])

    @batch
    def infer(**inputs: np.ndarray) -> dict[str, np.ndarray]:
        feed = {name: inputs[name].astype(np.int64, copy=False) for name in graph_inputs}
        with one_at_a_time:
            (logits,) = session.run([output], feed)
        return {output: np.asarray(logits, dtype=np.float32)}

    config = TritonConfig(
        grpc_address="127.0.0.1", grpc_port=args.grpc_port,
        http_address="127.0.0.1", http_port=args.http_port,
        metrics_address="127.0.0.1", metrics_port=args.metrics_port,
        exit_on_error=True, log_verbose=0,
    )
    _embed_this_python()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with Triton(config=config) as triton:
        triton.bind(
            model_name=args.model_name,
            infer_func=infer,
            inputs=[Tensor(name=n, dtype=np.int64, shape=(-1,)) for n in graph_inputs],
            outputs=[Tensor(name=output, dtype=np.float32, shape=(-1, labels))],
            config=ModelConfig(
                max_batch_size=args.max_batch_size,
                batcher=None if not args.dynamic_batching else DynamicBatcher(
                    max_queue_delay_microseconds=args.queue_delay_us
                ),
            ),
            strict=True,
        )
        triton.run()  # starts tritonserver, loads the model, waits until it is ready
        print(f"READY grpc={args.grpc_port} http={args.http_port}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
