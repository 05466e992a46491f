"""Sentence and token embeddings from the shipped all-MiniLM-L6-v2 ONNX graph (no torch).

One graph gives the encoder's last hidden state; this module turns it into
L2-normalised mean-pooled sentence vectors (the sentence-transformers recipe) or
L2-normalised per-token vectors (AMAR's token-level relevance gate). Texts longer than the
model's window are split into windows, so nothing is silently cut off. A call's texts are
tokenised as one batch and their windows run in length-sorted batches of ``batch_size``, in
one worker thread so the event loop never blocks on it; with ``parallel_runs`` > 1 (one
single-threaded run per core, no spinning thread pool) that many batches run at once.

Sentence vectors are kept in a bounded LRU cache keyed by the text: a RAG corpus sends the
same passages again and again, and gating a 16k-token context costs about as much as
detecting it, so a repeated passage should be embedded once.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from truthlens.evidence.priority import PriorityGate

DEFAULT_MODEL_DIR = Path(__file__).with_name("embedder_model")
MANIFEST_FORMAT = "truthlens-embedder/1"


class EmbedderError(Exception):
    """The embedding model is missing or unusable."""


@dataclass(frozen=True, slots=True)
class _Window:
    text_index: int
    ids: list[int]


class OnnxEmbedder:
    """all-MiniLM-L6-v2 in ONNX Runtime. Safe to share between concurrent streams."""

    def __init__(
        self,
        session: ort.InferenceSession,
        tokenizer: Tokenizer,
        *,
        max_length: int,
        batch_size: int = 1,
        cache_size: int = 4096,
        parallel_runs: int = 1,
    ) -> None:
        if max_length < 8:
            raise ValueError(f"max_length must be >= 8, got {max_length}")
        self._session = session
        self._tokenizer = tokenizer
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._max_length = max_length
        # Default 1: dynamic int8 quantises activations with one scale per tensor, so in a
        # padded batch a text's vector depends on its batch-mates (cosine 0.994 measured);
        # on 2 CPU cores batches of 1/4/16 took 0.96/0.73/1.04 s for 96 short texts: no
        # reliable gain to pay that price for. A GPU deployment may raise it.
        self._batch_size = max(1, batch_size)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = max(0, cache_size)
        self._cache_lock = threading.Lock()
        self._input_names = {i.name for i in session.get_inputs()}
        cls_id = tokenizer.token_to_id("[CLS]")
        sep_id = tokenizer.token_to_id("[SEP]")
        pad_id = tokenizer.token_to_id("[PAD]")
        if cls_id is None or sep_id is None or pad_id is None:
            raise EmbedderError("tokenizer lacks [CLS]/[SEP]/[PAD] tokens")
        self._cls, self._sep, self._pad = cls_id, sep_id, pad_id
        self._gate = PriorityGate()  # live calls' batches before the dry run's
        # One worker: ONNX Runtime already uses every core it is given per call.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder")
        # Batches of one call run this many at a time (each run alone gives the same vectors).
        self._runs = (
            ThreadPoolExecutor(max_workers=parallel_runs, thread_name_prefix="embedder-run")
            if parallel_runs > 1 else None
        )

    @classmethod
    def load(cls, model_dir: str | Path | None = None, *, intra_op_threads: int = 0,
             batch_size: int = 1, cache_size: int = 4096, parallel_runs: int = 1) -> OnnxEmbedder:
        """Load a model directory (``model.onnx``, ``tokenizer.json``, ``manifest.json``)."""
        root = Path(model_dir) if model_dir is not None else DEFAULT_MODEL_DIR
        manifest_path = root / "manifest.json"
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"cannot read {manifest_path}: {exc}") from exc
        if manifest.get("format") != MANIFEST_FORMAT:
            raise EmbedderError(f"{manifest_path}: format is not {MANIFEST_FORMAT!r}")
        return cls.load_files(
            root / "model.onnx",
            root / "tokenizer.json",
            max_length=int(manifest["max_length"]),
            intra_op_threads=intra_op_threads,
            batch_size=batch_size,
            cache_size=cache_size,
            parallel_runs=parallel_runs,
        )

    @classmethod
    def load_files(
        cls,
        onnx_path: str | Path,
        tokenizer_path: str | Path,
        *,
        max_length: int,
        intra_op_threads: int = 0,
        batch_size: int = 1,
        cache_size: int = 4096,
        parallel_runs: int = 1,
    ) -> OnnxEmbedder:
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            session = ort.InferenceSession(
                str(onnx_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbedderError(f"cannot load embedder from {onnx_path}: {exc}") from exc
        return cls(session, tokenizer, max_length=max_length, batch_size=batch_size,
                   cache_size=cache_size, parallel_runs=parallel_runs)

    @property
    def dim(self) -> int:
        shape = self._session.get_outputs()[0].shape
        return int(shape[-1]) if isinstance(shape[-1], int) else 384

    # -- public async API -------------------------------------------------------------

    async def embed(self, texts: list[str]) -> np.ndarray:
        """L2-normalised mean-pooled vectors, shape ``(len(texts), dim)``, float32."""
        _check_texts(texts)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.embed_sync, list(texts))

    async def token_embeddings(self, texts: list[str]) -> list[np.ndarray]:
        """Per text, L2-normalised vectors of its word-piece tokens (special tokens excluded)."""
        _check_texts(texts)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.token_embeddings_sync, list(texts))

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._runs is not None:
            self._runs.shutdown(wait=False, cancel_futures=True)

    # -- synchronous core (runs in the worker thread) ------------------------------------

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._cache_lock:
            for i, text in enumerate(texts):
                hit = self._cache.get(text)
                if hit is not None:
                    self._cache.move_to_end(text)
                    out[i] = hit
                else:
                    missing.setdefault(text, []).append(i)
        if missing:
            fresh = self._pooled(list(missing))
            with self._cache_lock:
                for (text, rows), vector in zip(missing.items(), fresh, strict=True):
                    out[rows] = vector
                    if self._cache_size:
                        self._cache[text] = vector.copy()
                        self._cache.move_to_end(text)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return out

    def _pooled(self, texts: Sequence[str]) -> np.ndarray:
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        counts = np.zeros(len(texts), dtype=np.float64)
        for window, hidden in self._run(texts):
            # Mean over every real position, [CLS]/[SEP] included, as sentence-transformers does.
            sums[window.text_index] += hidden.sum(axis=0)
            counts[window.text_index] += hidden.shape[0]
        pooled = sums / np.maximum(counts, 1.0)[:, None]
        return _normalise(pooled).astype(np.float32)

    def token_embeddings_sync(self, texts: Sequence[str]) -> list[np.ndarray]:
        _check_texts(texts)
        parts: list[list[np.ndarray]] = [[] for _ in texts]
        for window, hidden in self._run(texts):
            parts[window.text_index].append(hidden[1:-1])  # drop [CLS] and [SEP]
        out: list[np.ndarray] = []
        for chunks in parts:
            rows = np.concatenate(chunks, axis=0) if chunks else np.zeros((0, self.dim))
            out.append(_normalise(rows).astype(np.float32))
        return out

    def _windows(self, texts: Sequence[str]) -> list[_Window]:
        body = self._max_length - 2
        windows: list[_Window] = []
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        for index, encoding in enumerate(encodings):
            ids = list(encoding.ids)
            starts = range(0, len(ids), body) if ids else range(1)
            for start in starts:
                windows.append(_Window(index, [self._cls, *ids[start : start + body], self._sep]))
        return windows

    def _run(self, texts: Sequence[str]) -> list[tuple[_Window, np.ndarray]]:
        """Hidden states of every window, batched by similar length to keep padding small. A
        background call (the dry run) runs its batches one at a time, each after the live calls
        running then (:mod:`truthlens.evidence.priority`)."""
        windows = sorted(self._windows(texts), key=lambda w: len(w.ids))
        batches = [windows[i : i + self._batch_size] for i in range(0, len(windows), self._batch_size)]
        hidden: list[np.ndarray] = []
        if self._gate.background():
            for batch in batches:
                self._gate.before_background_batch()
                hidden.append(self._run_batch(batch))
        else:
            with self._gate.live():
                if self._runs is not None and len(batches) > 1:
                    hidden = list(self._runs.map(self._run_batch, batches))
                else:
                    hidden = [self._run_batch(batch) for batch in batches]
        results: list[tuple[_Window, np.ndarray]] = []
        for batch, states in zip(batches, hidden, strict=True):
            for row, window in enumerate(batch):
                results.append((window, states[row, : len(window.ids)].astype(np.float64)))
        return results

    def _run_batch(self, batch: Sequence[_Window]) -> np.ndarray:
        width = max(len(w.ids) for w in batch)
        ids = np.full((len(batch), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run(None, feeds)
        return np.asarray(hidden)


def _check_texts(texts: Sequence[str]) -> None:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not a string")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a string, got {type(text).__name__}")


def _normalise(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    out: np.ndarray = rows / np.maximum(norms, 1e-12)
    return out

