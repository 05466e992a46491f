"""Hot reload and the detector section: a change waits for a restart (said once per change), and
setting it back to what is running says no restart is needed instead of warning again.

Real: ConfigStore reading a config file from disk, the validator."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from truthlens.gateway.policy.config_store import ConfigStore

SHIPPED = Path(__file__).resolve().parents[2] / "configs" / "config.yaml"


def _write(path: Path, max_answer_chars: int | None) -> None:
    doc = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))
    if max_answer_chars is not None:
        doc["detector"]["max_answer_chars"] = max_answer_chars
    else:
        doc["detector"].pop("max_answer_chars", None)
    doc["hallucination"]["threshold"] = 0.5 if max_answer_chars is None else 0.6  # the file's bytes change
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")


def test_reverting_the_detector_section_needs_no_restart(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = tmp_path / "config.yaml"
    _write(config, None)
    store = ConfigStore(config)
    caplog.set_level(logging.INFO, logger="truthlens.gateway.policy.config_store")

    _write(config, 1234)
    assert store.reload()
    assert "changes the detector settings: they take effect after a restart" in caplog.text
    caplog.clear()

    _write(config, None)  # back to what the running detector was built from
    assert store.reload()
    assert "after a restart" not in caplog.text
    assert "sets the detector back to the running settings: no restart needed" in caplog.text
