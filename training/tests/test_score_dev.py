"""Scoring finished checkpoints on the dev answers (``python -m training.score_dev``).

Real parts: two tiny randomly initialised BERT token classifiers built here (the shipped model's
tokenizer), the real row builder and dev scoring on a toy corpus written here; the score files
are read back with ``training.compare``. No scripted parts, no network.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training needs torch: pip install -e '.[train]'")
pytest.importorskip("transformers", reason="training needs transformers: pip install -e '.[train]'")

from training.compare import OutOfFold  # noqa: E402
from training.score_dev import main  # noqa: E402
from training.tests.tiny_training import corpus, tiny_base  # noqa: E402


def _two_checkpoints(tmp_path: Path) -> tuple[Path, Path]:
    from transformers import AutoModelForTokenClassification

    first = tiny_base(tmp_path / "first")
    model = AutoModelForTokenClassification.from_pretrained(first)
    with torch.no_grad():
        model.classifier.weight.mul_(-3.0)  # another checkpoint: other token probabilities
    second = tmp_path / "second"
    model.save_pretrained(second)
    shutil.copyfile(first / "tokenizer.json", second / "tokenizer.json")
    return first, second


def test_each_checkpoint_and_their_average_are_written_in_compare_format(tmp_path: Path) -> None:
    data = corpus(tmp_path / "corpus", "dev.jsonl", "ragtruth_qa")
    first, second = _two_checkpoints(tmp_path)
    out = tmp_path / "scores"
    assert main(["--corpus", str(data), "--model", str(first), str(second), "--out", str(out), "--average",
                 "--max-length", "128", "--threads", "1"]) == 0

    a, b, mean = (OutOfFold.load(out / f"{name}.npz") for name in ("first", "second", "average"))
    assert list(a.sets) == list(b.sets) == list(mean.sets) == ["ragtruth_qa"] * 12
    assert list(a.hallucinated) == [i % 2 == 1 for i in range(12)]  # the toy corpus: every odd answer is wrong
    assert not np.allclose(a.log_odds, b.log_odds)

    def peak(scores: OutOfFold) -> np.ndarray:
        return 1 / (1 + np.exp(-scores.log_odds))

    assert np.allclose(peak(mean), (peak(a) + peak(b)) / 2, atol=1e-6)
    assert (out / "first.rows.pt").exists() and (out / "second.rows.pt").exists()  # each in its own tokenizer


def test_two_checkpoints_with_one_name_are_refused(tmp_path: Path) -> None:
    data = corpus(tmp_path / "corpus", "dev.jsonl", "ragtruth_qa")
    first = tiny_base(tmp_path / "a" / "model")
    shutil.copytree(first, tmp_path / "b" / "model")
    with pytest.raises(SystemExit):
        main(["--corpus", str(data), "--model", str(first), str(tmp_path / "b" / "model"), "--out", str(tmp_path)])
