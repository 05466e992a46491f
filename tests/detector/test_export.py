"""Export of Hugging Face token classifiers to detector model directories.

Real parts only: tiny randomly initialised ModernBERT / BERT token classifiers built here in
torch with a WordPiece tokenizer trained here, exported with torch.onnx and run in
onnxruntime. Nothing is scripted or mocked.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import (
    Tokenizer,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.export.checkpoint import export_model
from truthlens.detector.export.cli import main
from truthlens.detector.export.onnx_graph import ExportError
from truthlens.detector.manifest import load_manifest
from truthlens.detector.prompt import build_prompt
from truthlens.detector.types import Detection, DetectionInput, Detector, DetectorSettings

torch = pytest.importorskip(
    "torch", reason="export needs torch and transformers: pip install -e '.[export]' (CI installs it)"
)
pytest.importorskip("transformers", reason="export needs transformers: pip install -e '.[export]'")

_TEXT = (
    "The Eiffel Tower is 330 metres tall and was completed in March 1889 . "
    "Paris is the capital of France and has about two million residents . "
    "The passages state that the tower was designed by Gustave Eiffel ' s company . "
    "Briefly answer the following question based on the passages ; unable to answer . "
) * 4


def _tokenizer() -> Tokenizer:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=400, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator([_TEXT], trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return tok


def _save(model: torch.nn.Module, tok: Tokenizer, path: Path) -> Path:
    model.save_pretrained(path)
    tok.save(str(path / "tokenizer.json"))
    return path


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return _tokenizer()


@pytest.fixture(scope="module")
def modernbert_checkpoint(tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer) -> Path:
    from transformers import ModernBertConfig, ModernBertForTokenClassification

    torch.manual_seed(0)
    config = ModernBertConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=3,
        num_attention_heads=4, local_attention=128, global_attn_every_n_layers=3, max_position_embeddings=1024,
        pad_token_id=0, bos_token_id=2, eos_token_id=3, cls_token_id=2, sep_token_id=3, num_labels=2,
    )
    return _save(ModernBertForTokenClassification(config).eval(), tokenizer, tmp_path_factory.mktemp("modernbert"))


@pytest.fixture(scope="module")
def bert_checkpoint(tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer) -> Path:
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(1)
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=512, num_labels=2,
    )
    return _save(BertForTokenClassification(config).eval(), tokenizer, tmp_path_factory.mktemp("bert"))


def _feed(tok: Tokenizer, names: list[str], pairs: list[tuple[str, str]], max_length: int) -> dict[str, np.ndarray]:
    tok.enable_truncation(max_length, strategy="only_first")
    encs = [tok.encode(p, a) for p, a in pairs]
    tok.no_truncation()
    width = max(len(e.ids) for e in encs)
    cols = {
        "input_ids": [list(e.ids) + [0] * (width - len(e.ids)) for e in encs],
        "attention_mask": [[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in encs],
        "token_type_ids": [list(e.type_ids) + [0] * (width - len(e.ids)) for e in encs],
    }
    return {n: np.asarray(cols[n], dtype=np.int64) for n in names}


def _torch_logits(checkpoint: Path, feed: dict[str, np.ndarray]) -> np.ndarray:
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(str(checkpoint), attn_implementation="eager").eval()
    with torch.inference_mode():
        return model(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits.numpy()


def _pairs() -> list[tuple[str, str]]:
    long_context = [f"passage text number {i} : the eiffel tower is 330 metres tall ." for i in range(60)]
    return [
        (build_prompt(long_context, "How tall is the tower?"), "The tower is 330 metres tall."),
        (build_prompt(["Paris is the capital of France."], "What is the capital?"), "Paris."),
    ]


def test_modernbert_export_matches_torch_past_the_local_window(modernbert_checkpoint: Path, tmp_path: Path, tokenizer: Tokenizer) -> None:
    out = tmp_path / "model"
    report = export_model(modernbert_checkpoint, out, quantize="none", opset=17, max_length=300)

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "truthlens-detector/1"
    assert manifest["inputs"] == ["input_ids", "attention_mask"]  # ModernBERT has no segment ids
    assert manifest["hallucinated_index"] == 1 and manifest["labels"][1] == "hallucinated"
    assert manifest["max_length"] == 300 and manifest["quantization"] == "none"
    assert manifest["source"]["architecture"] == "ModernBertForTokenClassification"
    assert report.verification is not None and 300 in report.verification.lengths
    assert report.verification.max_abs_logit_diff < 1e-4
    loaded = load_manifest(out)  # the runtime accepts the directory as written
    assert loaded.inputs == ("input_ids", "attention_mask") and loaded.max_length == 300

    # independent check: the shipped files alone reproduce torch on a 300-token input and a padded batch
    shipped_tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert shipped_tok.truncation is None and shipped_tok.padding is None
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask"]
    feed = _feed(shipped_tok, manifest["inputs"], _pairs(), 300)
    assert feed["input_ids"].shape == (2, 300) and feed["attention_mask"][1].sum() < 300
    got = session.run(["logits"], feed)[0]
    want = _torch_logits(modernbert_checkpoint, feed)
    mask = feed["attention_mask"].astype(bool)
    assert got.shape == want.shape == (2, 300, 2)
    assert np.abs(got[mask] - want[mask]).max() < 1e-4


def test_bert_export_with_segment_ids_and_int8(bert_checkpoint: Path, tmp_path: Path) -> None:
    fp32 = export_model(bert_checkpoint, tmp_path / "fp32", quantize="none", max_length=256)
    int8 = export_model(bert_checkpoint, tmp_path / "int8", quantize="int8", max_length=256)

    assert fp32.inputs == ("input_ids", "attention_mask", "token_type_ids")
    manifest = json.loads((tmp_path / "int8" / "manifest.json").read_text())
    assert manifest["quantization"] == "int8-dynamic-per-channel"
    assert manifest["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]
    assert int8.model_bytes < fp32.model_bytes
    assert int8.verification is not None and int8.verification.int8_mean_prob_diff is not None
    assert int8.verification.int8_mean_prob_diff <= 0.05
    assert int8.verification.int8_label_agreement is not None and int8.verification.int8_label_agreement > 0.8

    session = ort.InferenceSession(str(tmp_path / "int8" / "model.onnx"), providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(tmp_path / "int8" / "tokenizer.json"))
    feed = _feed(tok, manifest["inputs"], _pairs(), 256)
    logits = session.run(["logits"], feed)[0]
    assert logits.shape == (*feed["input_ids"].shape, 2) and np.isfinite(logits).all()


def test_blockwise_int8_stays_closer_to_the_float_model_than_dynamic_int8(bert_checkpoint: Path, tmp_path: Path) -> None:
    import onnx

    dynamic = export_model(bert_checkpoint, tmp_path / "int8", quantize="int8", max_length=256)
    blockwise = export_model(bert_checkpoint, tmp_path / "block", quantize="int8-blockwise", max_length=256)

    manifest = json.loads((tmp_path / "block" / "manifest.json").read_text())
    assert manifest["quantization"] == "int8-blockwise-32"
    ops = {node.op_type for node in onnx.load(str(tmp_path / "block" / "model.onnx")).graph.node}
    assert "MatMulNBits" in ops and "MatMulInteger" not in ops
    assert "DequantizeLinear" in ops  # the embedding tables as uint8
    assert blockwise.fused_operators is None  # blockwise quantises MatMul nodes: the graph stays unfused
    assert blockwise.verification is not None and dynamic.verification is not None
    assert blockwise.verification.int8_mean_prob_diff is not None and dynamic.verification.int8_mean_prob_diff is not None
    assert blockwise.verification.int8_mean_prob_diff < dynamic.verification.int8_mean_prob_diff

    # the written files alone, against torch on a long input and a padded batch
    session = ort.InferenceSession(str(tmp_path / "block" / "model.onnx"), providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(tmp_path / "block" / "tokenizer.json"))
    feed = _feed(tok, manifest["inputs"], _pairs(), 256)
    got, want = session.run(["logits"], feed)[0], _torch_logits(bert_checkpoint, feed)
    mask = feed["attention_mask"].astype(bool)
    prob = lambda logits: np.exp(logits[..., 1]) / np.exp(logits).sum(-1)  # noqa: E731
    assert np.abs(prob(got)[mask] - prob(want)[mask]).max() < 0.05

    # and the detector serves the directory as it is written
    engine = create_detector(DetectorSettings(model_dir=str(tmp_path / "block"), provider="cpu"))
    item = DetectionInput(("The Eiffel Tower is 330 metres tall.",), "How tall is it?", "It is 330 metres tall.")
    detection = asyncio.run(_detect_and_close(engine, item))
    assert detection.status in ("clean", "detected") and detection.answer_tokens > 0


async def _detect_and_close(engine: Detector, item: DetectionInput) -> Detection:
    try:
        return await engine.detect(item, threshold=0.5)
    finally:
        await engine.close()


def test_cli_takes_one_int8_form(bert_checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--checkpoint", str(bert_checkpoint), "--out", str(tmp_path / "x"), "--int8", "--int8-blockwise"])
    assert "not allowed with" in capsys.readouterr().err
    assert main(["--checkpoint", str(bert_checkpoint), "--out", str(tmp_path / "b"), "--int8-blockwise"]) == 0
    assert json.loads(capsys.readouterr().out)["quantization"] == "int8-blockwise-32"


def test_rejects_a_classifier_without_two_labels(tmp_path: Path, tokenizer: Tokenizer) -> None:
    from transformers import BertConfig, BertForTokenClassification

    config = BertConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_labels=3)
    checkpoint = _save(BertForTokenClassification(config), tokenizer, tmp_path / "three")
    with pytest.raises(ExportError, match="2-label"):
        export_model(checkpoint, tmp_path / "out")
    assert not (tmp_path / "out" / "model.onnx").exists()


def test_cli_reports_json_and_fails_loudly(bert_checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--checkpoint", str(tmp_path / "missing"), "--out", str(tmp_path / "x")]) == 1
    assert "not a Hugging Face checkpoint" in capsys.readouterr().err

    assert main(["--checkpoint", str(bert_checkpoint), "--out", str(tmp_path / "cli"), "--opset", "14", "--max-length", "128"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["opset"] == 14 and report["max_length"] == 128
    assert report["verification"]["max_abs_logit_diff"] < 1e-4
    assert json.loads((tmp_path / "cli" / "manifest.json").read_text())["source"]["opset"] == 14
