"""Write a Triton model repository serving the detector (and the relevance embedder).

``truthlens export --triton-repo DIR`` lays out, for Triton's ONNX Runtime backend::

    DIR/truthlens_detector/config.pbtxt + 1/model.onnx
    DIR/truthlens_embedder/config.pbtxt + 1/model.onnx   (the "grounded" rows' embedder)

Tensor names and dims come from the ONNX graphs themselves (checked against the detector's
manifest), so ``detector.backend: remote`` finds exactly what it sends and reads. Each model
gets dynamic batching (preferred sizes, a bounded queue delay), an instance group (GPU or CPU)
and, on request, the TensorRT execution accelerator in fp16. Gateways keep the model
directory itself: they tokenise with its ``tokenizer.json`` and read its manifest.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import onnxruntime as ort

from truthlens.detector.manifest import ModelDirError, load_manifest, require_single_model, resolve_model_dir

DETECTOR_NAME = "truthlens_detector"
EMBEDDER_NAME = "truthlens_embedder"
# The relevance embedder ships inside the evidence package (src/truthlens/evidence/embedder_model).
EMBEDDER_DIR = Path(__file__).resolve().parents[2] / "evidence" / "embedder_model"

_TYPES = {"tensor(int64)": "TYPE_INT64", "tensor(int32)": "TYPE_INT32", "tensor(float)": "TYPE_FP32",
          "tensor(float16)": "TYPE_FP16"}


@dataclass(frozen=True, slots=True)
class RepoOptions:
    max_batch_size: int = 32
    preferred_batch_sizes: tuple[int, ...] = (8, 16, 32)
    max_queue_delay_us: int = 500
    kind: Literal["gpu", "cpu"] = "gpu"
    instances: int = 1
    tensorrt_fp16: bool = False  # TensorRT execution accelerator (GPU only), fp16 kernels
    embedder: bool = True


@dataclass(frozen=True, slots=True)
class _Tensor:
    name: str
    data_type: str
    dims: tuple[int, ...]  # without the batch dimension; -1: variable


def _signature(path: Path) -> tuple[list[_Tensor], list[_Tensor]]:
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own untyped errors for bad graphs
        raise ModelDirError(f"{path}: onnxruntime cannot load it ({exc})") from exc

    def tensors(args: list[ort.NodeArg]) -> list[_Tensor]:
        out = []
        for a in args:
            if a.type not in _TYPES:
                raise ModelDirError(f"{path}: tensor {a.name!r} has type {a.type}, which the repository cannot declare")
            if not a.shape or isinstance(a.shape[0], int):
                raise ModelDirError(f"{path}: tensor {a.name!r} has no dynamic batch dimension (shape {a.shape})")
            dims = tuple(d if isinstance(d, int) and d > 0 else -1 for d in a.shape[1:])
            out.append(_Tensor(a.name, _TYPES[a.type], dims))
        return out

    return tensors(session.get_inputs()), tensors(session.get_outputs())


def model_config(name: str, inputs: list[_Tensor], outputs: list[_Tensor], options: RepoOptions) -> str:
    """The ``config.pbtxt`` text for one ONNX model."""

    def block(kind: str, tensors: list[_Tensor]) -> str:
        items = ",\n".join(
            f'  {{ name: "{t.name}" data_type: {t.data_type} dims: [ {", ".join(str(d) for d in t.dims)} ] }}'
            for t in tensors
        )
        return f"{kind} [\n{items}\n]\n"

    preferred = [b for b in options.preferred_batch_sizes if b <= options.max_batch_size]
    text = (
        f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: {options.max_batch_size}\n'
        + block("input", inputs)
        + block("output", outputs)
        + "dynamic_batching {\n"
        + (f"  preferred_batch_size: [ {', '.join(str(b) for b in preferred)} ]\n" if preferred else "")
        + f"  max_queue_delay_microseconds: {options.max_queue_delay_us}\n}}\n"
        + f"instance_group [ {{ count: {options.instances} kind: KIND_{options.kind.upper()} }} ]\n"
    )
    if options.tensorrt_fp16 and options.kind == "gpu":
        # Variable sequence lengths: TensorRT builds engines per shape profile on first use;
        # warm the pool with the lengths traffic uses before taking load.
        text += (
            "optimization { execution_accelerators { gpu_execution_accelerator: [ {\n"
            '  name: "tensorrt"\n'
            '  parameters { key: "precision_mode" value: "FP16" }\n'
            '  parameters { key: "max_workspace_size_bytes" value: "1073741824" }\n'
            "} ] } }\n"
        )
    return text


def _write_model(repo: Path, name: str, onnx_path: Path, inputs: list[_Tensor], outputs: list[_Tensor],
                 options: RepoOptions) -> Path:
    target = repo / name
    (target / "1").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(onnx_path, target / "1" / "model.onnx")
    (target / "config.pbtxt").write_text(model_config(name, inputs, outputs, options), encoding="utf-8")
    return target


def write_triton_repo(model_dir: str | None, repo: Path, options: RepoOptions = RepoOptions()) -> list[Path]:
    """Write the repository for the detector at ``model_dir`` (None: the shipped model);
    returns the model directories written. Raises :class:`ModelDirError` for a graph the
    manifest does not describe, ``ValueError`` for bad options."""
    if options.max_batch_size < 1 or options.instances < 1 or options.max_queue_delay_us < 0:
        raise ValueError("max_batch_size and instances must be >= 1, max_queue_delay_us >= 0")
    manifest = load_manifest(resolve_model_dir(model_dir))
    require_single_model(manifest)
    inputs, outputs = _signature(manifest.model_path)
    unknown = [t.name for t in inputs if t.name not in manifest.inputs]
    if unknown:
        raise ModelDirError(
            f"{manifest.model_path}: graph inputs {unknown} are not in the manifest's {manifest.inputs}"
        )
    if not outputs or outputs[0].dims[-1:] not in ((len(manifest.labels),), (-1,)):
        raise ModelDirError(f"{manifest.model_path}: the first output is not [batch, sequence, {len(manifest.labels)}]")
    written = [_write_model(repo, DETECTOR_NAME, manifest.model_path, inputs, outputs[:1], options)]
    if options.embedder:
        if not (EMBEDDER_DIR / "model.onnx").is_file():  # never a repository that silently lacks it
            raise ModelDirError(f"{EMBEDDER_DIR / 'model.onnx'}: the relevance embedder is missing "
                                "(reinstall the package, or pass --no-embedder to write the detector alone)")
        e_inputs, e_outputs = _signature(EMBEDDER_DIR / "model.onnx")
        written.append(_write_model(repo, EMBEDDER_NAME, EMBEDDER_DIR / "model.onnx", e_inputs, e_outputs, options))
    return written
