"""bench/baselines.py: an old model comes back from git history, and a shallow clone is told what to do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench import baselines


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_restore_writes_the_baseline_from_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baselines, "FOLDER", tmp_path)
    try:
        folder = baselines.restore("run6")
    except baselines.BaselineUnavailable as exc:  # a shallow or exported copy: nothing to restore from
        pytest.skip(f"run6 cannot be restored in this checkout: {exc}")
    assert folder == tmp_path / "run6"
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "truthlens-detector/1"
    assert (folder / "model.onnx").stat().st_size > 1_000_000
    assert not list(folder.glob(".*.partial"))
    # A second call finds it restored and writes nothing.
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    assert baselines.restore("run6") == folder
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp


def test_a_shallow_clone_is_told_to_fetch_the_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q")
    _git(origin, "config", "user.email", "t@example.com")
    _git(origin, "config", "user.name", "t")
    old = origin / "bench" / "baselines" / "old"
    old.mkdir(parents=True)
    for name in baselines.FILES:
        (old / name).write_text(name, encoding="utf-8")
    _git(origin, "add", ".")
    _git(origin, "commit", "-q", "-m", "baseline")
    kept_at = _git(origin, "rev-parse", "HEAD")
    _git(origin, "rm", "-q", "-r", "bench")
    (origin / "README").write_text("x", encoding="utf-8")
    _git(origin, "add", ".")
    _git(origin, "commit", "-q", "-m", "baseline leaves")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow)], check=True)

    monkeypatch.setattr(baselines, "ROOT", shallow)
    monkeypatch.setattr(baselines, "FOLDER", shallow / "bench" / "baselines")
    monkeypatch.setitem(baselines.BASELINES, "old", kept_at)
    with pytest.raises(baselines.BaselineUnavailable, match="shallow clone.*git fetch --unshallow"):
        baselines.restore("old")
    assert not (shallow / "bench" / "baselines" / "old").exists()

    # The full clone restores it.
    monkeypatch.setattr(baselines, "ROOT", origin)
    monkeypatch.setattr(baselines, "FOLDER", origin / "bench" / "baselines")
    assert (baselines.restore("old") / "model.onnx").read_text(encoding="utf-8") == "model.onnx"


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(baselines.BaselineUnavailable, match="run6"):
        baselines.restore("run99")
