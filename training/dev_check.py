"""Scores the model being trained on the corpus's dev parts, so a run keeps its best epoch.

Every dev answer becomes all the rows serving would run for it (no row cap), and its score is
the highest P(hallucinated) over the answer tokens those rows read: the threshold-free signal
the shipped verdict starts from. Per dev set the AUROC of that score against the human label is
reported; the run keeps the epoch whose mean over the sets is highest. Only dev parts are read
here (``CORPUS/dev*.jsonl``): the evaluation folds never choose a checkpoint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training.batches import collate
from training.corpus.splits import read_jsonl
from training.encode import IGNORE, Encoded
from training.evaluate import auroc
from training.rows import REQUEST_READING, RowBuilder

BATCH = 32
MEAN = "mean"


@dataclass(frozen=True, slots=True)
class DevAnswer:
    group: str
    hallucinated: bool
    rows: list[Encoded]


def dev_group(domain: str) -> str:
    """RAGTruth's three tasks are each a target of their own; any other set is judged whole."""
    return domain if domain.startswith("ragtruth") else domain.split("_")[0]


def content_key(paths: list[Path], **settings: object) -> dict[str, object]:
    """What rows built from ``paths`` are valid for: their bytes and the settings, wherever they lie."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return {"sha256": digest.hexdigest(), **settings}


def dev_answers(
    corpus: Path, builder: Callable[[], RowBuilder], cache: Path, max_length: int, tokenizer: Path
) -> list[DevAnswer]:
    """The dev answers of ``corpus`` with their serving rows in ``tokenizer``'s ids, built once (``cache``)."""
    files = sorted(corpus.glob("dev*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{corpus}: no dev*.jsonl to choose an epoch on")
    # The tokenizer's bytes are part of the key: rows cached for one vocabulary must never feed another model.
    key = content_key([*files, tokenizer], max_length=max_length, requests=REQUEST_READING)
    if cache.exists():
        saved = torch.load(cache, weights_only=False)
        if saved["key"] == key:
            return [DevAnswer(g, h, [Encoded(*r) for r in rows]) for g, h, rows in saved["answers"]]
    make_rows = builder()  # the relevance scorer loads only when rows must be built
    answers = []
    for path in files:
        for example in read_jsonl(path):
            rows = make_rows.rows(example)
            if rows:
                answers.append(DevAnswer(dev_group(example.domain), bool(example.labels), rows))
    cache.parent.mkdir(parents=True, exist_ok=True)
    packed = [(a.group, a.hallucinated, [(r.input_ids, r.token_type_ids, r.labels, r.answer_offsets) for r in a.rows])
              for a in answers]
    torch.save({"key": key, "answers": packed}, cache)
    return answers


def dev_scores(model: Any, answers: list[DevAnswer], pad_id: int, device: torch.device) -> dict[str, float]:
    """AUROC per dev set of each answer's highest token probability, and their mean (``"mean"``)."""
    return scores_by_group(answers, dev_peaks(model, answers, pad_id, device))


def scores_by_group(answers: list[DevAnswer], peak: np.ndarray) -> dict[str, float]:
    """AUROC of ``peak`` per dev set (sets with one class only are skipped), and their mean."""
    scores: dict[str, float] = {}
    for group in sorted({a.group for a in answers}):
        members = [i for i, a in enumerate(answers) if a.group == group]
        truth = [answers[i].hallucinated for i in members]
        if all(truth) or not any(truth):
            continue  # one class only: no ranking to measure
        scores[group] = auroc(peak[members].tolist(), truth)
    scores[MEAN] = float(np.mean(list(scores.values()))) if scores else 0.0
    return scores


def format_scores(scores: dict[str, float]) -> str:
    """``set AUROC`` pairs on one line, as every training command prints them."""
    return " ".join(f"{k} {v:.4f}" for k, v in scores.items())


def dev_peaks(model: Any, answers: list[DevAnswer], pad_id: int, device: torch.device) -> np.ndarray:
    """Each answer's highest P(hallucinated) over the tokens its rows read."""
    rows, owners = flat_rows(answers)

    def probabilities(indices: list[int]) -> torch.Tensor:
        batch = collate([rows[i] for i in indices], pad_id, device)
        labels = batch.pop("labels")
        return read_probabilities(model(**batch).logits, labels)

    was_training = model.training
    model.eval()
    with torch.no_grad():
        peak = peaks_by_answer(owners, [len(r.input_ids) for r in rows], len(answers), probabilities)
    model.train(was_training)
    return peak


def same_answers(a: list[DevAnswer], b: list[DevAnswer]) -> bool:
    """Whether two lists hold the same dev answers in the same order (set and label of each), as
    the same dev files read in two tokenizers do."""
    return len(a) == len(b) and all(
        x.group == y.group and x.hallucinated == y.hallucinated for x, y in zip(a, b, strict=True)
    )


def flat_rows(answers: list[DevAnswer]) -> tuple[list[Encoded], list[int]]:
    """Every dev answer's rows in one list, and the answer each row belongs to."""
    return [row for a in answers for row in a.rows], [i for i, a in enumerate(answers) for _ in a.rows]


def read_probabilities(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """P(hallucinated) per token, 0 where serving does not read the token (label -100)."""
    return torch.softmax(logits.float(), dim=-1)[..., 1].masked_fill(labels == IGNORE, 0.0)


def peaks_by_answer(
    owners: list[int], lengths: list[int], n_answers: int, probabilities: Callable[[list[int]], torch.Tensor]
) -> np.ndarray:
    """Each answer's highest token probability over its rows (``owners[i]``: row i's answer);
    ``probabilities(rows)`` gives a batch of rows' read-token probabilities."""
    order = sorted(range(len(owners)), key=lengths.__getitem__)  # little padding
    peak = np.zeros(n_answers)
    for start in range(0, len(order), BATCH):
        chunk = order[start : start + BATCH]
        for j, value in enumerate(probabilities(chunk).amax(dim=1).cpu().tolist()):
            peak[owners[chunk[j]]] = max(peak[owners[chunk[j]]], value)
    return peak
