"""Keeping a run's best epoch on the dev parts (``python -m training.train --keep-best-epoch``).

Real parts: a tiny randomly initialised BERT token classifier built here, the real row builder,
training loop and dev scoring on a toy corpus written here. No scripted parts, no network.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="training needs torch: pip install -e '.[train]'")
pytest.importorskip("transformers", reason="training needs transformers: pip install -e '.[train]'")

from training.dev_check import MEAN, content_key, dev_answers, dev_group, dev_scores  # noqa: E402
from training.rows import RowBuilder  # noqa: E402
from training.tests.tiny_training import corpus, tiny_base, train  # noqa: E402
from training.train import row_builder  # noqa: E402
from truthlens.evidence.embedder import DEFAULT_MODEL_DIR as EMBEDDER_DIR  # noqa: E402


def _toy_corpus(path: Path) -> Path:
    corpus(path)
    corpus(path, "dev.jsonl", "ragtruth_qa")  # both classes: ranked
    corpus(path, "dev_rotowire.jsonl", "rotowire_accuracy", wrong_every=1)  # faithful only: nothing to rank
    return path


def _no_builder() -> RowBuilder:
    raise AssertionError("the dev rows were rebuilt although their cache holds them")


def test_a_run_keeps_the_epoch_that_scored_best_on_the_dev_parts(tmp_path: Path) -> None:
    from transformers import AutoModelForTokenClassification

    base = tiny_base(tmp_path / "base")
    data = _toy_corpus(tmp_path / "corpus")
    out = tmp_path / "run"
    train(["--corpus", str(data), "--base", str(base), "--out", str(out), "--batch-size", "4", "--epochs", "3",
           "--lr", "3e-3", "--threads", "1", "--seed", "4", "--max-length", "128", "--device", "cpu",
           "--keep-best-epoch"])

    recorded = json.loads((out / "training_args.json").read_text())
    history = recorded["dev_by_epoch"]
    assert [h["epoch"] for h in history] == [0, 1, 2]
    assert all(set(h) == {"epoch", "step", "ragtruth_qa", MEAN} for h in history)  # the one-class set is skipped
    best = max(history, key=lambda h: h[MEAN])
    assert recorded["kept_epoch"] == best["epoch"]
    assert recorded["device"] == "cpu"

    # What was saved is the kept epoch's model: scoring it again gives that epoch's numbers.
    answers = dev_answers(data, _no_builder, out / "dev_rows.pt", 128, base / "tokenizer.json")
    saved = AutoModelForTokenClassification.from_pretrained(out)
    again = dev_scores(saved, answers, 0, torch.device("cpu"))
    assert again[MEAN] == pytest.approx(best[MEAN], abs=1e-4)


def test_the_dev_rows_cache_follows_the_files_bytes_not_their_place(tmp_path: Path) -> None:
    first = _toy_corpus(tmp_path / "here")
    moved = Path(shutil.copytree(first, tmp_path / "there"))
    files = sorted(first.glob("dev*.jsonl"))
    assert content_key(files, max_length=128) == content_key(sorted(moved.glob("dev*.jsonl")), max_length=128)
    assert content_key(files, max_length=128) != content_key(files, max_length=256)

    base = tiny_base(tmp_path / "base")
    tokenizer = base / "tokenizer.json"
    built = dev_answers(first, lambda: row_builder(base, 128, 1), tmp_path / "cache.pt", 128, tokenizer)
    assert {a.group for a in built} == {"ragtruth_qa", "rotowire"}
    reread = dev_answers(moved, _no_builder, tmp_path / "cache.pt", 128, tokenizer)
    assert [(a.group, a.hallucinated, a.rows) for a in reread] == [(a.group, a.hallucinated, a.rows) for a in built]

    # Rows in one vocabulary's ids are never handed to a model with another tokenizer.
    with pytest.raises(AssertionError, match="rebuilt"):
        dev_answers(moved, _no_builder, tmp_path / "cache.pt", 128, EMBEDDER_DIR / "tokenizer.json")

    (moved / "dev.jsonl").write_text((moved / "dev.jsonl").read_text().replace("bridge", "tunnel"))
    with pytest.raises(AssertionError, match="rebuilt"):
        dev_answers(moved, _no_builder, tmp_path / "cache.pt", 128, tokenizer)


def test_dev_sets_are_grouped_as_the_issue_judges_them() -> None:
    assert dev_group("ragtruth_summary") == "ragtruth_summary"
    assert dev_group("quintd_ice_hockey") == "quintd"
    assert dev_group("xsum_faith") == "xsum"


def test_keeping_the_best_epoch_refuses_a_run_split_over_sittings(tmp_path: Path) -> None:
    base = tiny_base(tmp_path / "base")
    data = _toy_corpus(tmp_path / "corpus")
    with pytest.raises(SystemExit):
        train(["--corpus", str(data), "--base", str(base), "--out", str(tmp_path / "run"), "--threads", "1",
               "--max-length", "128", "--keep-best-epoch", "--stop-after-steps", "2"])
