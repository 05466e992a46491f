"""A real Triton Inference Server on loopback hosting a detector model directory.

For tests, benchmarks and trying ``detector.backend: remote`` on one machine: runs
``deploy/triton/pytriton_host.py`` (the ``tritonserver`` binary that ``nvidia-pytriton`` ships,
the ONNX model in ONNX Runtime inside a bound Python function) as a child process bound to
127.0.0.1 only. pytriton pins ``numpy<2`` and its ``tritonclient`` ``protobuf<7``, which the
processor's dependencies exclude, so it lives in its own virtual environment:
``TRUTHLENS_TRITON_PYTHON`` names that environment's interpreter; without it,
``.triton/bin/python`` in the repository root, else this interpreter, when it can import
pytriton. :func:`unavailable_reason` says why Triton cannot run here (callers skip with it).
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from truthlens.testing import launch

HOST_SCRIPT = launch.REPO_ROOT / "deploy" / "triton" / "pytriton_host.py"
PYTHON_ENV = "TRUTHLENS_TRITON_PYTHON"
MODEL_NAME = "truthlens_detector"


def triton_python() -> str | None:
    """The interpreter that can import pytriton and onnxruntime, or None."""
    local = launch.REPO_ROOT / ".triton" / "bin" / "python"
    python = os.environ.get(PYTHON_ENV) or (str(local) if local.is_file() else sys.executable)
    if shutil.which(python) is None:
        return None
    probe = subprocess.run([python, "-c", "import pytriton.triton, onnxruntime"], capture_output=True, timeout=60)
    return python if probe.returncode == 0 else None


def unavailable_reason() -> str | None:
    """Why a Triton server cannot be started on this machine (None: it can)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"nvidia-pytriton ships tritonserver for x86-64 Linux only (this is {sys.platform}/{platform.machine()})"
    if triton_python() is None:
        named = os.environ.get(PYTHON_ENV)
        tried = f"{PYTHON_ENV}={named}" if named else f".triton/bin/python, then this interpreter ({PYTHON_ENV} unset)"
        return (
            f"no Python that imports nvidia-pytriton and onnxruntime (tried {tried}); create one with "
            "`python -m venv .triton && .triton/bin/pip install nvidia-pytriton onnxruntime`"
        )
    return None


@dataclass(slots=True)
class TritonServer:
    """One loopback Triton; ``grpc_url`` is what ``detector.remote.url`` takes."""

    model_dir: Path
    workdir: Path
    grpc_port: int
    http_port: int
    metrics_port: int
    python: str
    max_batch_size: int = 32
    child: launch.Child | None = None

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def alive(self) -> bool:
        return self.child is not None and self.child.alive

    def start(self, timeout_s: float = 120.0) -> None:
        argv = [
            self.python, str(HOST_SCRIPT),
            "--model-dir", str(self.model_dir),
            "--model-name", MODEL_NAME,
            "--grpc-port", str(self.grpc_port),
            "--http-port", str(self.http_port),
            "--metrics-port", str(self.metrics_port),
            "--max-batch-size", str(self.max_batch_size),
        ]
        self.child = launch.Child("triton", argv, self.workdir / "triton.log")
        launch.wait_until(
            lambda: launch.http_ok(f"http://127.0.0.1:{self.http_port}/v2/models/{MODEL_NAME}/ready"),
            "triton", self.child, timeout_s,
        )

    def stop(self) -> None:
        """SIGTERM (pytriton stops tritonserver and its stubs), SIGKILL of the group after 15 s."""
        if self.child is not None:
            self.child.stop(timeout_s=15.0)
            self.child = None

    def kill(self) -> None:
        """Abrupt loss of the server (SIGKILL of its whole process group), as a crash would be."""
        if self.child is not None:
            child, self.child = self.child, None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.proc.pid, signal.SIGKILL)
            child.stop()  # reaps it and closes its log


@contextmanager
def running(model_dir: Path, workdir: Path, *, max_batch_size: int = 32) -> Iterator[TritonServer]:
    """A started server that is always stopped, however the block ends."""
    python = triton_python()
    if python is None:
        raise RuntimeError(unavailable_reason() or "no Python with nvidia-pytriton")
    server = TritonServer(
        model_dir=model_dir, workdir=workdir, python=python, max_batch_size=max_batch_size,
        grpc_port=launch.free_port(), http_port=launch.free_port(), metrics_port=launch.free_port(),
    )
    try:
        server.start()
        yield server
    finally:
        server.stop()
