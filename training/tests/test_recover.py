"""Rebuilding a checkpoint from an int8 ONNX detector (:mod:`training.recover`).

Real parts: a tiny randomly initialised BERT token classifier built here, exported by the
product's own ``export_model`` to int8, then recovered; no hub, no scripted parts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="recovery needs torch: pip install -e '.[export]'")
pytest.importorskip("transformers", reason="recovery needs transformers: pip install -e '.[export]'")

from training.recover import RECOVERED, recover  # noqa: E402
from truthlens.detector.export.checkpoint import export_model  # noqa: E402
from truthlens.detector.manifest import DEFAULT_MODEL_DIR  # noqa: E402


def test_an_int8_graph_gives_back_its_weights_within_rounding(tmp_path: Path) -> None:
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(3)
    config = BertConfig(
        vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=512, num_labels=2,
    )
    original = BertForTokenClassification(config).eval()
    with torch.no_grad():  # distinct values everywhere, as after training (fresh biases are all 0)
        for parameter in original.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.02)
    checkpoint = tmp_path / "checkpoint"
    original.save_pretrained(checkpoint)
    shutil.copyfile(DEFAULT_MODEL_DIR / "tokenizer.json", checkpoint / "tokenizer.json")
    # Recovery reads graphs quantised without attention fusion (fused Q/K/V are packed together).
    export_model(checkpoint, tmp_path / "int8", quantize="int8", max_length=128, optimize=False)
    manifest = json.loads((tmp_path / "int8" / "manifest.json").read_text())
    manifest.setdefault("source", {})["training"] = [{"corpus": "c", "steps": 7}]
    (tmp_path / "int8" / "manifest.json").write_text(json.dumps(manifest))

    out = recover(tmp_path / "int8", tmp_path / "recovered", checkpoint)

    _assert_same_model(original, out)
    assert json.loads((out / RECOVERED).read_text())["training"] == [{"corpus": "c", "steps": 7}]
    assert (out / "tokenizer.json").is_file()


def test_an_attention_fused_int8_graph_gives_back_its_weights_within_rounding(tmp_path: Path) -> None:
    """The shipped graph's form: ONNX Runtime's BERT fusion packs Q/K/V into one QAttention node."""
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(4)
    config = BertConfig(
        vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=512, num_labels=2,
    )
    original = BertForTokenClassification(config).eval()
    with torch.no_grad():
        for parameter in original.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.02)
    checkpoint = tmp_path / "checkpoint"
    original.save_pretrained(checkpoint)
    shutil.copyfile(DEFAULT_MODEL_DIR / "tokenizer.json", checkpoint / "tokenizer.json")
    export_model(checkpoint, tmp_path / "int8", quantize="int8", max_length=128, optimize=True)
    fused = json.loads((tmp_path / "int8" / "manifest.json").read_text())["source"]["graph_optimization"]["fused"]
    assert fused.get("Attention") == 2  # the case under test: packed query/key/value

    out = recover(tmp_path / "int8", tmp_path / "recovered", checkpoint)

    _assert_same_model(original, out)


def _assert_same_model(original: Any, out: Path) -> None:
    """The rebuilt checkpoint holds the original's weights within int8 rounding and gives its logits."""
    from transformers import AutoModelForTokenClassification

    rebuilt = AutoModelForTokenClassification.from_pretrained(out).eval()
    want, got = original.state_dict(), rebuilt.state_dict()
    for name, tensor in want.items():
        if name.endswith("position_ids"):
            continue
        scale = float(tensor.abs().max()) or 1.0
        # int8 keeps ~1/127 of each channel's range; a transposed or misplaced weight is far off.
        assert np.abs((got[name] - tensor).numpy()).max() <= scale / 50, name
    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102]])
    with torch.no_grad():
        assert torch.allclose(original(input_ids=ids).logits, rebuilt(input_ids=ids).logits, atol=0.05)
