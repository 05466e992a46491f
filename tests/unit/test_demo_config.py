"""``truthlens demo``'s configuration: the shipped config plus its standard (self-refine) route."""

from __future__ import annotations

from pathlib import Path

import yaml

from truthlens.demo import REFINE_HEADER, demo_config
from truthlens.gateway.policy.config import load_config
from truthlens.testing.launch import REPO_ROOT


def test_demo_adds_a_standard_route_for_its_header_and_keeps_the_rest(tmp_path: Path) -> None:
    shipped = REPO_ROOT / "configs" / "config.yaml"
    cfg = load_config(demo_config(shipped, tmp_path))
    by_name = {d.name: d for d in cfg.decisions}
    assert by_name["demo_refine"].route is not None and by_name["demo_refine"].route.mode == "standard"
    assert by_name["chat_completions"].route is not None and by_name["chat_completions"].route.mode == "lightweight"
    assert REFINE_HEADER[0] in (tmp_path / "config.yaml").read_text()


def test_a_relative_model_directory_still_points_next_to_the_original_file(tmp_path: Path) -> None:
    original = tmp_path / "site" / "config.yaml"
    original.parent.mkdir()
    doc = yaml.safe_load((REPO_ROOT / "configs" / "config.yaml").read_text())
    doc["detector"]["model"] = "models/detector"
    original.write_text(yaml.safe_dump(doc))
    work = tmp_path / "work"
    work.mkdir()
    written = yaml.safe_load(demo_config(original, work).read_text())
    assert written["detector"]["model"] == str((original.parent / "models" / "detector").resolve())
