"""The shipped all-MiniLM-L6-v2 ONNX embedder: real ONNX Runtime, real tokenizer, no torch."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest

from truthlens.evidence.embedder import DEFAULT_MODEL_DIR, EmbedderError, OnnxEmbedder


def test_shipped_model_directory_is_small_and_described() -> None:
    manifest = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text())
    assert manifest["format"] == "truthlens-embedder/1"
    assert manifest["pooling"] == "mean" and manifest["normalize"] is True
    if manifest["quantization"] != "none":
        assert manifest["int8_agreement"]["min_cosine"] >= 0.99
    size = sum(p.stat().st_size for p in DEFAULT_MODEL_DIR.iterdir())
    assert size <= 25 * 1024 * 1024


def test_vectors_are_unit_rows_and_order_independent(embedder: OnnxEmbedder) -> None:
    texts = ["A man is eating food.", "A man is riding a horse.", "", "short"]
    v = embedder.embed_sync(texts)
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # Batching pads rows to a common length; results must not depend on the batch.
    alone = embedder.embed_sync([texts[1]])
    assert float(alone[0] @ v[1]) > 0.9999


def test_similarity_matches_the_reference_model(embedder: OnnxEmbedder) -> None:
    # fp32 sentence-transformers reference: 0.755 (bread) and 0.247 (horse).
    v = embedder.embed_sync(["A man is eating food.", "A man is eating a piece of bread.",
                             "A man is riding a horse."])
    assert float(v[0] @ v[1]) == pytest.approx(0.755, abs=0.03)
    assert float(v[0] @ v[2]) == pytest.approx(0.247, abs=0.05)


def test_long_text_is_windowed_not_truncated(embedder: OnnxEmbedder) -> None:
    head = "The quarterly report covers revenue and costs. " * 60  # > 256 tokens
    tail = " The volcano erupted and lava reached the sea."
    full, cut = embedder.embed_sync([head + tail, head])
    assert float(full @ cut) < 0.9999  # the tail past the first window changed the vector
    tokens = embedder.token_embeddings_sync([head + tail])[0]
    assert tokens.shape[0] > 256
    assert np.allclose(np.linalg.norm(tokens, axis=1), 1.0, atol=1e-5)


async def test_async_embed_runs_off_the_event_loop(embedder: OnnxEmbedder) -> None:
    seen: list[str] = []
    original = embedder.embed_sync

    def spy(texts: list[str]) -> np.ndarray:
        seen.append(threading.current_thread().name)
        return original(texts)

    embedder.embed_sync = spy  # type: ignore[method-assign]
    try:
        v = await embedder.embed(["hello", "world"])
    finally:
        del embedder.embed_sync
    assert v.shape == (2, 384)
    assert seen and seen[0] != threading.main_thread().name


async def test_bad_input_is_a_clear_error(embedder: OnnxEmbedder) -> None:
    with pytest.raises(TypeError, match="list of strings"):
        await embedder.embed("not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        await embedder.embed(["ok", 3])  # type: ignore[list-item]
    assert (await embedder.embed([])).shape == (0, 384)


def test_sentence_vectors_are_cached_and_bounded() -> None:
    small = OnnxEmbedder.load(cache_size=2)
    try:
        first = small.embed_sync(["alpha", "beta"])
        assert len(small._cache) == 2
        again = small.embed_sync(["beta", "alpha", "beta"])
        assert np.array_equal(again, first[[1, 0, 1]])
        small.embed_sync(["gamma"])
        assert list(small._cache) == ["beta", "gamma"]  # "alpha" was least recently used
        again[0, 0] = 42.0  # callers get copies: the cache cannot be corrupted
        assert small.embed_sync(["beta"])[0, 0] == first[1, 0]
    finally:
        small.close()


def test_parallel_single_thread_runs_give_the_same_vectors() -> None:
    texts = ["A man is eating food.", "The volcano erupted and lava reached the sea.", "short", "x " * 300]
    alone = OnnxEmbedder.load(intra_op_threads=1, cache_size=0)
    parallel = OnnxEmbedder.load(intra_op_threads=1, cache_size=0, parallel_runs=2)
    try:
        ran: set[str] = set()
        run_batch = parallel._run_batch

        def spy(batch):  # type: ignore[no-untyped-def]
            ran.add(threading.current_thread().name)
            return run_batch(batch)

        parallel._run_batch = spy  # type: ignore[method-assign]
        assert np.array_equal(parallel.embed_sync(texts), alone.embed_sync(texts))
        assert ran and all(name.startswith("embedder-run") for name in ran)  # on its run threads
    finally:
        alone.close()
        parallel.close()


def test_missing_model_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EmbedderError, match="manifest.json"):
        OnnxEmbedder.load(tmp_path)


def test_serving_imports_no_torch() -> None:
    code = ("import sys; from truthlens.evidence.embedder import OnnxEmbedder; "
            "OnnxEmbedder.load().embed_sync(['x']); "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
