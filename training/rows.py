"""Training rows built by the serving planner itself, so the model learns on what it will judge.

Serving never truncates: an answer over a long context is cut into claims, and each claim is
judged in a row beside the context pieces most relevant to it (``grounded`` rows,
:mod:`truthlens.detector.grounding`); only that claim's tokens are read from the row. Training on
whole prompts instead (and skipping every example that does not fit, as the first recipe did)
never showed the model a real LLM answer over a real retrieval context: RAGTruth's sources are
1–10 k characters. Here every example becomes the rows serving would run, and each row is labelled
on exactly the answer tokens serving reads from it (the rest of the row is ``-100``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training.corpus.builder import Example
from training.encode import IGNORE, Encoded
from truthlens.detector.chunking import Plan, Window
from truthlens.detector.encoding import ModelRow, TextEncoder
from truthlens.detector.grounding import plan_grounded
from truthlens.detector.prompt import read_task
from truthlens.detector.relevance import Relevance
from truthlens.detector.types import DetectorSettings

# How a request's question becomes the prompt's (read_task: a summary's or a record's instruction
# read as its shape's canonical one). Part of every cached rows key, so rows built before a
# change in that reading are built again.
REQUEST_READING = "read_task/2"  # 2: detector.reading.requests reads what a request asks (2 of 32,617 differ)
# Serving's default overlap between answer windows.
ANSWER_OVERLAP_TOKENS = DetectorSettings().answer_overlap_tokens


@dataclass(frozen=True, slots=True)
class RowBuilder:
    encoder: TextEncoder
    relevance: Relevance
    max_length: int

    def rows(self, example: Example) -> list[Encoded]:
        """The rows serving would run for ``example``, labelled on the tokens it reads from each."""
        answer = self.encoder.encode(example.answer)
        if len(answer) == 0:
            return []
        plan = plan_grounded(
            self.encoder,
            list(example.context),
            read_task(example.context, example.question).question,  # as serving reads the request
            example.answer,
            answer,
            self.relevance,
            max_length=self.max_length,
            answer_overlap_tokens=ANSWER_OVERLAP_TOKENS,
        )
        token_labels = _token_labels(answer.offsets, example)
        return [
            _labelled(row.ids, row.type_ids, row.answer_start, window.start, read, token_labels, answer.offsets)
            for row, window, read in _reads(plan)
        ]


def _reads(plan: Plan) -> list[tuple[ModelRow, Window, tuple[int, int]]]:
    """Each row with its answer window and the answer-token range serving reads from it."""
    out: list[tuple[ModelRow, Window, tuple[int, int]]] = []
    if plan.scored:
        for row, window, claim in zip(plan.rows, plan.windows, plan.scored, strict=True):
            out.append((row, window, (claim.start, claim.end)))
        return out
    for i, row in enumerate(plan.rows):
        window = plan.windows[i]
        out.append((row, window, (window.start, window.end)))
    return out


def _token_labels(offsets: np.ndarray, example: Example) -> np.ndarray:
    labels = np.zeros(len(offsets), dtype=np.int64)
    for span in example.labels:
        inside = (offsets[:, 0] < span.end) & (offsets[:, 1] > span.start)
        labels[inside] = 1
    return labels


def _labelled(
    ids: np.ndarray,
    type_ids: np.ndarray,
    answer_start: int,
    window_start: int,
    read: tuple[int, int],
    token_labels: np.ndarray,
    offsets: np.ndarray,
) -> Encoded:
    labels = np.full(len(ids), IGNORE, dtype=np.int64)
    first, last = read
    row_first = answer_start + (first - window_start)
    labels[row_first : row_first + (last - first)] = token_labels[first:last]
    # Tokens without characters (byte-fallback pieces) carry no claim: serving skips them too.
    empty = offsets[first:last, 0] == offsets[first:last, 1]
    labels[row_first : row_first + (last - first)][empty] = IGNORE
    return Encoded(
        input_ids=[int(x) for x in ids],
        token_type_ids=[int(x) for x in type_ids],
        labels=[int(x) for x in labels],
        answer_offsets=[(int(a), int(b)) for a, b in offsets[first:last]],
    )
