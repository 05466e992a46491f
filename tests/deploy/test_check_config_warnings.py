"""``truthlens check-config`` says what a valid config leaves unchecked: one API checked and not the
other, and (``--envoy``) Envoy routes that differ from the ones the config needs. Real: the CLI,
the config loader and the route planner; no servers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def check(tmp_path: Path, doc: dict[str, object], *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "truthlens", "check-config", "config.yaml", *extra], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)


def shipped() -> dict[str, object]:
    return dict(yaml.safe_load((REPO / "configs" / "config.yaml").read_text(encoding="utf-8")))


def test_a_config_that_checks_chat_but_not_responses_is_warned_about(tmp_path: Path) -> None:
    doc = shipped()
    doc["decisions"] = [d for d in doc["decisions"] if d["name"] != "responses"]  # type: ignore[attr-defined]
    done = check(tmp_path, doc)
    assert done.returncode == 0
    assert "warning: config.yaml: checks chat completions but no checked decision takes the Responses API " \
           "(/v1/responses)" in done.stderr
    assert check(tmp_path, shipped()).stderr == ""  # both checked: nothing to say


def test_envoy_routes_that_miss_a_detection_off_decision_are_warned_about(tmp_path: Path) -> None:
    doc = shipped()
    doc["decisions"].insert(0, {  # type: ignore[attr-defined]
        "name": "internal", "priority": 100,
        "rules": {"operator": "AND", "conditions": [{"type": "header", "name": "x-internal", "value": "1"}]},
        "plugins": [{"type": "hallucination", "configuration": {"enabled": False}}]})
    done = check(tmp_path, doc, "--envoy", str(REPO / "envoy.yaml"))
    assert done.returncode == 0
    assert 'decision "internal" is detection off, but no route skips the processor for it' in done.stderr
    assert "`truthlens envoy-routes` prints the routes this config needs" in done.stderr
    assert check(tmp_path, shipped(), "--envoy", str(REPO / "envoy.yaml")).stderr == ""


def test_a_config_that_checks_chat_but_not_the_legacy_completions_api_is_warned_about(tmp_path: Path) -> None:
    doc = shipped()
    doc["decisions"] = [d for d in doc["decisions"] if d["name"] != "completions"]  # type: ignore[attr-defined]
    done = check(tmp_path, doc)
    assert done.returncode == 0
    assert "no checked decision takes the legacy completions API (/v1/completions)" in done.stderr
    assert "the Responses API" not in done.stderr  # still checked: one warning, for the API left out
