"""An ensemble's token scores: other models' probabilities joined onto this model's tokens.

A model directory whose manifest names ``ensemble`` members runs them beside its own model, and
each answer token's probability becomes the mean of the models' (training/README.md, "A bigger
encoder": the mean of two models ranked every dev set's answers better than either). The models
cut the answer into different tokens, so they meet on characters: a member's probability covers
the characters of each of its tokens, and one of this model's tokens takes the highest member
probability over its characters (a flagged sub-word anywhere inside marks the whole token, as
spans do). A token no member token overlaps (rare: different handling of odd characters) keeps
this model's own probability. Calibration and the learned verdict in the ensemble's manifest are
fitted on these joined probabilities, so they hold for the ensemble only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from truthlens.detector.scoring.token_scorer import TokenScores

_NONE = -1.0  # below any probability: "no token of the member covers this character"


def joined(own: TokenScores, members: Sequence[TokenScores]) -> TokenScores:
    """``own``'s tokens, each with the mean of its probability and every member's on its characters."""
    if own.rows == 0 or not members:
        return own
    total = own.probs.astype(np.float64)
    count = np.ones(len(own.probs))
    for member in members:
        projected = project(member.offsets, member.probs, own.offsets)
        covered = projected > _NONE
        total[covered] += projected[covered]
        count[covered] += 1
    return replace(own, probs=(total / count).astype(np.float32), rows=own.rows + sum(m.rows for m in members))


def project(offsets: np.ndarray, probs: np.ndarray, onto: np.ndarray) -> np.ndarray:
    """For each ``[start, end)`` of ``onto``, the highest of ``probs`` over the tokens (``offsets``)
    that share a character with it; ``-1`` where none does."""
    if len(onto) == 0:
        return np.zeros(0, dtype=np.float64)
    n_chars = int(max(offsets[:, 1].max(initial=0), onto[:, 1].max(initial=0)))
    per_char = np.full(n_chars, _NONE)
    chars, owner = _characters(offsets)
    np.maximum.at(per_char, chars, np.asarray(probs, dtype=np.float64)[owner])
    result = np.full(len(onto), _NONE)
    chars, owner = _characters(onto)
    np.maximum.at(result, owner, per_char[chars])
    return result


def _characters(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every character index the tokens cover, and the token each belongs to."""
    starts = offsets[:, 0].astype(np.int64)
    lengths = np.clip(offsets[:, 1].astype(np.int64) - starts, 0, None)
    owner = np.repeat(np.arange(len(offsets)), lengths)
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + np.arange(int(lengths.sum())) - first, owner
