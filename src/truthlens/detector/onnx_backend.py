"""The ONNX Runtime backend: one inference session, provider choice, padded batch runs.

``load(settings)`` builds the complete detector (model directory → tokenizer, session,
micro-batcher, engine). Imports only onnxruntime, tokenizers and numpy.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import numpy as np
import onnxruntime as ort

from truthlens.detector.encoding import ModelRow, TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import (
    ModelDirError,
    ModelManifest,
    load_manifest,
    resolve_model_dir,
)
from truthlens.detector.relevance import Relevance, load_relevance
from truthlens.detector.types import DetectorSettings

log = logging.getLogger(__name__)

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def choose_providers(requested: Literal["auto", "cpu", "cuda"], available: Sequence[str]) -> list[str]:
    """Execution providers in preference order for ``requested`` given what this build offers."""
    if requested == "cpu":
        return [CPU]
    if CUDA in available:
        return [CUDA, CPU]
    if requested == "cuda":
        log.warning("detector: provider 'cuda' requested but onnxruntime offers only %s; using CPU", list(available))
    return [CPU]


class OnnxRunner:
    """Runs padded batches of :class:`ModelRow` and returns P(hallucinated) of each row's answer tokens."""

    def __init__(self, manifest: ModelManifest, settings: DetectorSettings, pad_id: int) -> None:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if settings.intra_op_threads > 0:
            options.intra_op_num_threads = settings.intra_op_threads
        providers = choose_providers(settings.provider, ort.get_available_providers())
        try:
            self._session = ort.InferenceSession(str(manifest.model_path), options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own untyped errors for bad graphs
            raise ModelDirError(f"{manifest.model_path}: onnxruntime cannot load it ({exc})") from exc
        self.provider = self._session.get_providers()[0]
        if "CUDAExecutionProvider" in providers and self.provider != "CUDAExecutionProvider":
            # onnxruntime-gpu without a visible GPU (or without its CUDA libraries) falls back silently.
            log.warning("detector: CUDA was offered but no GPU session could be made; running on %s", self.provider)
        graph_inputs = [i.name for i in self._session.get_inputs()]
        missing = [name for name in graph_inputs if name not in manifest.inputs]
        if missing:
            raise ModelDirError(f"{manifest.model_path}: graph needs inputs {missing} the manifest does not list")
        self._inputs = tuple(graph_inputs)
        self._output = self._session.get_outputs()[0].name
        self._index = manifest.hallucinated_index
        self._pad_id = pad_id

    def run(self, rows: Sequence[ModelRow]) -> list[np.ndarray]:
        feed = pad_rows(rows, self._pad_id)
        (logits,) = self._session.run([self._output], {name: feed[name] for name in self._inputs})
        return answer_probs(logits, rows, self._index)


def pad_rows(rows: Sequence[ModelRow], pad_id: int) -> dict[str, np.ndarray]:
    """The model's int64 input tensors for ``rows``, right-padded to the longest row
    (shared with the remote backend, so both feed the model byte-identical batches)."""
    width = max(r.length for r in rows)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    types = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : row.length] = row.ids
        mask[i, : row.length] = 1
        types[i, : row.length] = row.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def answer_probs(logits: np.ndarray, rows: Sequence[ModelRow], index: int) -> list[np.ndarray]:
    """P(label ``index``) of each row's answer tokens from ``[batch, length, labels]`` logits."""
    probs = _softmax_at(np.asarray(logits, dtype=np.float32), index)
    return [probs[i, r.answer_start : r.answer_start + r.answer_len].copy() for i, r in enumerate(rows)]


def grounded_relevance(settings: DetectorSettings) -> Relevance | None:
    """The context ranking of "grounded" rows: the shipped sentence embedder (word overlap,
    with a warning, when it cannot load); the other aggregations never need one."""
    if settings.chunk_aggregation != "grounded":
        return None
    relevance = load_relevance(settings.intra_op_threads)
    log.info("detector: grounded rows rank context by %s relevance", relevance.name)
    return relevance


def _softmax_at(logits: np.ndarray, index: int) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return np.asarray(exp[..., index] / exp.sum(axis=-1), dtype=np.float32)


def load(settings: DetectorSettings) -> DetectorEngine:
    """The ONNX detector for ``settings`` (the shipped model when ``model_dir`` is None)."""
    manifest = load_manifest(resolve_model_dir(settings.model_dir))
    try:
        encoder = TextEncoder(manifest.tokenizer_path)
    except Exception as exc:  # tokenizers raises plain Exception for unreadable files
        raise ModelDirError(f"{manifest.tokenizer_path}: cannot load tokenizer ({exc})") from exc
    runner = OnnxRunner(manifest, settings, encoder.pad_id)
    engine = DetectorEngine(
        settings, manifest, encoder, runner.run, provider=runner.provider, relevance=grounded_relevance(settings)
    )
    log.info(
        "detector: %s on %s (requested %s), max_length %d, quantization %s, token threshold %.2f",
        manifest.directory,
        runner.provider,
        settings.provider,
        manifest.max_length,
        manifest.quantization,
        engine.token_threshold,
    )
    return engine
