"""Scores finished checkpoints on a corpus's dev answers, in ``training.compare``'s format.

Each checkpoint reads the dev answers in its own tokenizer (the rows built once and cached), and
each answer's score is its highest token P(hallucinated): the signal ``--keep-best-epoch`` ranks
epochs by. Two checkpoints of different sizes or tokenizers are then compared answer for answer
with a paired interval (``python -m training.compare A.npz B.npz``), before any verdict is fitted
on either. With ``--average`` the mean of the checkpoints' token peaks is written as well: what
running them side by side would score. Only dev parts are read (``CORPUS/dev*.jsonl``).

    python -m training.score_dev --corpus training/output/llm10 --out training/output/dev-scores \\
        --model training/output/run9 training/output/mpnet-full
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForTokenClassification

from training.compare import OutOfFold
from training.dev_check import DevAnswer, dev_peaks, format_scores, same_answers, scores_by_group
from training.train import model_dev_answers
from truthlens.detector.encoding import TextEncoder


def checkpoint_peaks(model_dir: Path, answers: list[DevAnswer]) -> np.ndarray:
    """Each answer's highest token probability under the checkpoint (on the CPU)."""
    model = AutoModelForTokenClassification.from_pretrained(str(model_dir))
    return dev_peaks(model, answers, TextEncoder(model_dir / "tokenizer.json").pad_id, torch.device("cpu"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.score_dev", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a corpus directory with dev*.jsonl")
    parser.add_argument("--model", type=Path, nargs="+", required=True, help="Hugging Face checkpoint directories")
    parser.add_argument("--out", type=Path, required=True, help="writes OUT/<checkpoint name>.npz (and average.npz)")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--average", action="store_true", help="also write the checkpoints' mean token peak")
    args = parser.parse_args(argv)
    names = [m.name for m in args.model]
    if len(set(names)) != len(names):
        parser.error("--model: two checkpoints share a directory name (their score files would collide)")
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)

    first: list[DevAnswer] | None = None
    peaks: list[np.ndarray] = []
    for model_dir in args.model:
        answers = model_dev_answers(model_dir, args.corpus, args.out / f"{model_dir.name}.rows.pt",
                                    args.max_length, args.threads)
        if first is not None and not same_answers(answers, first):
            raise SystemExit(f"{model_dir}: its dev answers differ from {args.model[0]}'s")
        first = first or answers
        peak = checkpoint_peaks(model_dir, answers)
        peaks.append(peak)
        print(f"{model_dir.name:<24} {format_scores(scores_by_group(answers, peak))}", flush=True)
        _write(args.out / f"{model_dir.name}.npz", answers, peak)
    if args.average and first is not None:
        mean = np.mean(peaks, axis=0)
        print(f"{'average':<24} {format_scores(scores_by_group(first, mean))}", flush=True)
        _write(args.out / "average.npz", first, mean)
    return 0


def out_of_fold(answers: list[DevAnswer], peaks: np.ndarray, texts: list[str]) -> OutOfFold:
    """Token peaks of the dev answers in ``training.compare``'s format (``texts`` name the answers)."""
    return OutOfFold.from_peaks([a.group for a in answers], [a.hallucinated for a in answers], peaks, texts)


def _write(path: Path, answers: list[DevAnswer], peak: np.ndarray) -> None:
    # Answers are named by position: every checkpoint reads the same dev files in the same order.
    out_of_fold(answers, peak, [f"dev answer {i}" for i in range(len(answers))]).save(path)


if __name__ == "__main__":
    raise SystemExit(main())
