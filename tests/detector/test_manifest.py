"""Model directory validation: a bad directory fails at start-up naming the file and field.

Nothing is scripted: the directories are real files on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truthlens.detector.manifest import DEFAULT_MODEL_DIR, ModelDirError, load_manifest, resolve_model_dir


def _copy_dir(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in ("model.onnx", "tokenizer.json", "manifest.json"):
        (dst / name).write_bytes((src / name).read_bytes())
    return dst


def test_valid_directory_loads(tiny_model_dir: Path) -> None:
    manifest = load_manifest(tiny_model_dir)
    assert manifest.max_length == 512
    assert manifest.labels[manifest.hallucinated_index] == "hallucinated"
    assert manifest.model_path == tiny_model_dir / "model.onnx"


def test_builtin_resolves_to_the_shipped_directory() -> None:
    assert resolve_model_dir(None) == DEFAULT_MODEL_DIR
    assert resolve_model_dir("builtin") == DEFAULT_MODEL_DIR
    assert resolve_model_dir("/x/y") == Path("/x/y")


def test_missing_directory_and_files(tmp_path: Path, tiny_model_dir: Path) -> None:
    with pytest.raises(ModelDirError, match="does not exist"):
        load_manifest(tmp_path / "nope")
    broken = _copy_dir(tiny_model_dir, tmp_path / "m")
    (broken / "tokenizer.json").unlink()
    with pytest.raises(ModelDirError, match="has no tokenizer.json"):
        load_manifest(broken)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "other/2"}, "format 'other/2'"),
        ({"hallucinated_index": 2}, "'hallucinated_index' 2 is outside"),
        ({"hallucinated_index": True}, "'hallucinated_index' has the wrong type"),
        ({"max_length": 8}, "'max_length' 8 is too small"),
        ({"prompt_template": "summary"}, "prompt_template 'summary' is not supported"),
        ({"inputs": ["attention_mask"]}, "'inputs' must include 'input_ids'"),
        ({"labels": ["only"]}, "'labels' must list"),
    ],
)
def test_bad_manifest_fields_are_named(tmp_path: Path, tiny_model_dir: Path, change: dict, message: str) -> None:
    directory = _copy_dir(tiny_model_dir, tmp_path / "m")
    raw = json.loads((directory / "manifest.json").read_text())
    raw.update(change)
    (directory / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ModelDirError, match=message):
        load_manifest(directory)


def test_missing_field_and_bad_json(tmp_path: Path, tiny_model_dir: Path) -> None:
    directory = _copy_dir(tiny_model_dir, tmp_path / "m")
    raw = json.loads((directory / "manifest.json").read_text())
    del raw["max_length"]
    (directory / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ModelDirError, match="missing field 'max_length'"):
        load_manifest(directory)
    (directory / "manifest.json").write_text("{not json")
    with pytest.raises(ModelDirError, match="not readable JSON"):
        load_manifest(directory)


def test_calibrated_threshold_is_read_and_checked(tmp_path: Path, tiny_model_dir: Path) -> None:
    assert load_manifest(tiny_model_dir).token_threshold == 0.5  # no calibration recorded
    directory = _copy_dir(tiny_model_dir, tmp_path / "m")
    raw = json.loads((directory / "manifest.json").read_text())
    raw["calibration"] = {"token_threshold": 0.7, "data": "dev fold"}
    (directory / "manifest.json").write_text(json.dumps(raw))
    assert load_manifest(directory).token_threshold == 0.7
    for bad in ({"token_threshold": 1.0}, {"token_threshold": "0.7"}, "0.7"):
        raw["calibration"] = bad
        (directory / "manifest.json").write_text(json.dumps(raw))
        with pytest.raises(ModelDirError, match="'calibration' must be an object whose 'token_threshold'"):
            load_manifest(directory)


def test_calibrated_decision_is_read_and_checked(tmp_path: Path, tiny_model_dir: Path) -> None:
    plain = load_manifest(tiny_model_dir)
    assert (plain.aggregation, plain.min_span_length) == ("noisy_or", 1)  # no decision recorded
    directory = _copy_dir(tiny_model_dir, tmp_path / "m")
    raw = json.loads((directory / "manifest.json").read_text())
    raw["calibration"] = {"token_threshold": 0.7, "aggregation": "span_mean", "min_span_length": 4}
    (directory / "manifest.json").write_text(json.dumps(raw))
    manifest = load_manifest(directory)
    assert (manifest.token_threshold, manifest.aggregation, manifest.min_span_length) == (0.7, "span_mean", 4)
    for bad, key in (({"aggregation": "mean"}, "aggregation"), ({"min_span_length": 0}, "min_span_length")):
        raw["calibration"] = {"token_threshold": 0.7, **bad}
        (directory / "manifest.json").write_text(json.dumps(raw))
        with pytest.raises(ModelDirError, match=f"'calibration.{key}'"):
            load_manifest(directory)
