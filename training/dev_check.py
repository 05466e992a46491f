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
from training.rows import RowBuilder

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


def dev_answers(corpus: Path, builder: Callable[[], RowBuilder], cache: Path, max_length: int) -> list[DevAnswer]:
    """The dev answers of ``corpus`` with their serving rows, built once (``cache``)."""
    files = sorted(corpus.glob("dev*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{corpus}: no dev*.jsonl to choose an epoch on")
    key = content_key(files, max_length=max_length)
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
    was_training = model.training
    model.eval()
    with torch.no_grad():
        peak = _peaks(model, answers, pad_id, device)
    model.train(was_training)
    scores: dict[str, float] = {}
    for group in sorted({a.group for a in answers}):
        members = [i for i, a in enumerate(answers) if a.group == group]
        truth = [answers[i].hallucinated for i in members]
        if all(truth) or not any(truth):
            continue  # one class only: no ranking to measure
        scores[group] = auroc(peak[members].tolist(), truth)
    scores[MEAN] = float(np.mean(list(scores.values()))) if scores else 0.0
    return scores


def _peaks(model: Any, answers: list[DevAnswer], pad_id: int, device: torch.device) -> np.ndarray:
    """Each answer's highest P(hallucinated) over the tokens its rows read."""
    flat = [(i, row) for i, answer in enumerate(answers) for row in answer.rows]
    flat.sort(key=lambda item: len(item[1].input_ids))  # little padding
    peak = np.zeros(len(answers))
    for start in range(0, len(flat), BATCH):
        chunk = flat[start : start + BATCH]
        batch = collate([row for _, row in chunk], pad_id, device)
        read = batch.pop("labels") != IGNORE  # the answer tokens serving reads from each row
        probs = torch.softmax(model(**batch).logits.float(), dim=-1)[..., 1].masked_fill(~read, 0.0)
        for j, value in enumerate(probs.amax(dim=1).cpu().tolist()):
            peak[chunk[j][0]] = max(peak[chunk[j][0]], value)
    return peak
