"""A fine-tuning corpus focused on some domains of a mix (``python -m training.corpus.focus``).

Real parts: the module's command on a small mix written here. No scripted parts, no network.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.corpus.builder import Example
from training.corpus.focus import main
from training.corpus.splits import read_jsonl, write_jsonl


def _mix(path: Path) -> Path:
    examples = [
        Example(f"{domain}{i}", "train", domain, ("A passage.",), "A question?", f"Answer {i}.", ())
        for domain, n in (("roles_error", 3), ("roles_twin", 3), ("halueval_qa", 10), ("xsum", 10))
        for i in range(n)
    ]
    path.mkdir()
    write_jsonl(iter(examples), path / "train.jsonl")
    write_jsonl(iter(examples[:2]), path / "dev_quintd.jsonl")
    return path


def test_the_focus_domains_come_whole_with_a_replay_sample_and_the_dev_parts_unchanged(tmp_path: Path) -> None:
    mix = _mix(tmp_path / "mix")
    out = tmp_path / "focus"
    assert main(["--mix", str(mix), "--domains", "roles_error", "roles_twin", "--replay", "5", "--out", str(out)]) == 0
    chosen = read_jsonl(out / "train.jsonl")
    domains = [e.domain for e in chosen]
    assert domains.count("roles_error") == 3 and domains.count("roles_twin") == 3
    assert len(chosen) == 11 and len({e.id for e in chosen}) == 11  # 5 replayed, none twice
    assert (out / "dev_quintd.jsonl").read_bytes() == (mix / "dev_quintd.jsonl").read_bytes()
    recorded = json.loads((out / "mix.json").read_text())
    assert recorded["focus"] == {"roles_error": 3, "roles_twin": 3} and sum(recorded["replay"].values()) == 5


def test_a_domain_the_mix_lacks_is_named_in_the_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mix = _mix(tmp_path / "mix")
    with pytest.raises(SystemExit):
        main(["--mix", str(mix), "--domains", "roles_swap", "--out", str(tmp_path / "focus")])
    assert "roles_swap" in capsys.readouterr().err
