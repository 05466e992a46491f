"""The optimised export: ONNX Runtime's transformer optimizer (fused attention) before int8.

Real parts only: a tiny randomly initialised BERT token classifier built here in torch with a
WordPiece tokenizer trained here, exported with torch.onnx, optimised by onnxruntime's
transformer optimizer and run in onnxruntime. Nothing is scripted or mocked.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from truthlens.detector.export.checkpoint import export_model, optimize_onnx
from truthlens.detector.export.cli import main
from truthlens.detector.export.onnx_graph import ExportError, GraphShape

torch = pytest.importorskip("torch", reason="export needs torch and transformers: pip install -e '.[export]'")
pytest.importorskip("transformers", reason="export needs transformers: pip install -e '.[export]'")

from tests.detector.test_export import _feed, _pairs, _save, _tokenizer, _torch_logits  # noqa: E402


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import BertConfig, BertForTokenClassification

    tok = _tokenizer()
    torch.manual_seed(3)
    config = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=512, num_labels=2,
    )
    return _save(BertForTokenClassification(config).eval(), tok, tmp_path_factory.mktemp("bert-opt"))


def _ops(path: Path) -> Counter[str]:
    return Counter(node.op_type for node in onnx.load(str(path)).graph.node)


def _run(model_dir: Path, feed: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(str(model_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    logits: np.ndarray = session.run(["logits"], feed)[0]
    return logits


def _probs(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return np.asarray(e[..., 1] / e.sum(axis=-1))


def test_int8_export_fuses_attention_by_default_and_stays_close_to_torch(bert: Path, tmp_path: Path) -> None:
    report = export_model(bert, tmp_path / "int8", quantize="int8", max_length=256)

    assert report.fused_operators is not None and report.fused_operators.get("Attention") == 2  # one per layer
    ops = _ops(tmp_path / "int8" / "model.onnx")
    assert ops["QAttention"] + ops["Attention"] == 2 and ops["Softmax"] == 0  # no unfused attention left
    manifest = json.loads((tmp_path / "int8" / "manifest.json").read_text())
    assert manifest["source"]["graph_optimization"]["fused"]["Attention"] == 2
    assert manifest["quantization"] == "int8-dynamic-per-channel"
    v = report.verification
    assert v is not None and v.optimized_max_abs_logit_diff is not None and v.optimized_max_abs_logit_diff < 1e-3
    assert v.int8_verdict_agreement is not None and v.int8_mean_prob_diff is not None
    assert v.int8_mean_prob_diff <= 0.05

    # independent check on inputs the exporter never saw, a padded batch included
    feed = _feed(Tokenizer.from_file(str(tmp_path / "int8" / "tokenizer.json")), manifest["inputs"], _pairs(), 256)
    mask = feed["attention_mask"].astype(bool)
    got, want = _probs(_run(tmp_path / "int8", feed))[mask], _probs(_torch_logits(bert, feed))[mask]
    assert np.abs(got - want).mean() < 0.05


def test_no_optimize_keeps_the_plain_graph(bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--checkpoint", str(bert), "--out", str(tmp_path / "plain"), "--int8", "--no-optimize", "--max-length", "128"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fused_operators"] is None
    ops = _ops(tmp_path / "plain" / "model.onnx")
    assert ops["Attention"] == ops["QAttention"] == 0 and ops["Softmax"] == 2
    manifest = json.loads((tmp_path / "plain" / "manifest.json").read_text())
    assert manifest["source"]["graph_optimization"] == {"optimizer": "none"}


def test_an_existing_fp32_model_is_reoptimised_and_verified_against_itself(
    bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fp32 = tmp_path / "fp32"
    export_model(bert, fp32, quantize="none", max_length=256)
    assert _ops(fp32 / "model.onnx")["Attention"] == 0  # fp32 exports are not optimised by default

    fused = optimize_onnx(fp32, tmp_path / "fused", quantize="none", shape=GraphShape(num_heads=4, hidden_size=64))
    assert fused.fused_operators is not None and fused.fused_operators["Attention"] == 2
    feed = _feed(Tokenizer.from_file(str(fp32 / "tokenizer.json")), ["input_ids", "attention_mask", "token_type_ids"],
                 _pairs(), 256)
    mask = feed["attention_mask"].astype(bool)
    assert np.abs(_run(tmp_path / "fused", feed)[mask] - _run(fp32, feed)[mask]).max() < 1e-3

    # the CLI: int8 by default, JSON report, manifest carried over with the new graph's facts
    # heads and hidden size come from the manifest the export wrote
    assert json.loads((fp32 / "manifest.json").read_text())["source"]["num_attention_heads"] == 4
    argv = ["--optimize-onnx", str(fp32 / "model.onnx"), "--out", str(tmp_path / "cli")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["quantization"] == "int8-dynamic-per-channel" and report["fused_operators"]["Attention"] == 2
    assert report["verification"]["int8_mean_prob_diff"] <= 0.05
    manifest = json.loads((tmp_path / "cli" / "manifest.json").read_text())
    assert manifest["labels"] == json.loads((fp32 / "manifest.json").read_text())["labels"]
    assert manifest["source"]["verification"]["reference"] == "input fp32 ONNX graph"

    # an int8 graph cannot be fused any more: a clear refusal, nothing written
    assert main(["--optimize-onnx", str(tmp_path / "cli"), "--out", str(tmp_path / "again")]) == 1
    assert "already quantised" in capsys.readouterr().err
    assert not (tmp_path / "again" / "model.onnx").exists()
    with pytest.raises(ExportError, match="not found"):
        optimize_onnx(tmp_path / "missing", tmp_path / "out")

