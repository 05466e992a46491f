"""Paths in a config are resolved from the config file's folder, whatever the working directory,
and every path problem names its key: offline (``check-config``'s validation) and when the
processor starts (``truthlens serve`` exits 1 logging the key). Nothing is scripted: the real
config loader, the shipped model's manifest, the real CLI in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from truthlens import cli, starter
from truthlens.detector.manifest import DEFAULT_MODEL_DIR
from truthlens.gateway.policy.preflight import validate
from truthlens.options import ConfigError

SRC = Path(__file__).resolve().parents[2] / "src"


def write_config(folder: Path, model: str) -> Path:
    doc = yaml.safe_load(starter.CONFIG.read_text())
    doc["detector"]["model"] = model
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_relative_model_is_found_next_to_the_config_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    shutil.copytree(DEFAULT_MODEL_DIR, site / "models" / "m")
    path = write_config(site, "models/m")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = validate(os.path.relpath(path, elsewhere))
    assert config.detector.model_dir == str(site / "models" / "m")  # absolute: independent of the cwd


def test_a_missing_model_directory_names_detector_model(tmp_path: Path) -> None:
    path = write_config(tmp_path, "models/absent")
    with pytest.raises(ConfigError) as err:
        validate(path)
    assert err.value.key == "detector.model"
    assert str(tmp_path / "models" / "absent") in err.value.problem
    assert "config file's folder" in err.value.problem


def test_an_incomplete_model_directory_names_detector_model(tmp_path: Path) -> None:
    (tmp_path / "models" / "m").mkdir(parents=True)
    (tmp_path / "models" / "m" / "model.onnx").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"^detector\.model: .*has no tokenizer\.json"):
        validate(write_config(tmp_path, "models/m"))


def test_a_broken_ensemble_member_names_detector_model(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(DEFAULT_MODEL_DIR, site / "models" / "m")
    manifest = site / "models" / "m" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"format"', '"ensemble": ["member"], "format"', 1))
    with pytest.raises(ConfigError, match=r"^detector\.model: .*m/member' does not exist"):
        validate(write_config(site, "models/m"))


def test_serve_refuses_to_start_naming_detector_model(tmp_path: Path) -> None:
    path = write_config(tmp_path, "models/absent")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "truthlens", "serve", "--config", str(path), "--listen", "127.0.0.1:0",
         "--metrics-listen", "off"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert done.returncode == 1
    assert "cannot start: detector.model: " in done.stderr, done.stderr


def test_serve_without_config_finds_init_s_file_or_the_packaged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.default_config() == str(starter.CONFIG)
    (tmp_path / "config.yaml").write_text("version: 1\n")
    assert cli.default_config() == "config.yaml"
