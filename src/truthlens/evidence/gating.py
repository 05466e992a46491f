"""AMAR-style relevance gating: score each passage against the question, drop or down-rank
the low ones before detection and before refine/ACR prompts see them.

Gate (AMAR §3, "relevance gating"): g = sigmoid(a · (s − b)), where s is the pooled cosine
between the question's and the passage's mean-pooled all-MiniLM-L6-v2 vectors. AMAR learns an
MLP before the sigmoid; with a frozen encoder the fixed affine map (a, b) does that job:
cosines live in about [−0.1, 0.9] and a bare sigmoid would squash every gate into
[0.47, 0.71]. ``b`` is the cosine at which g = 0.5 (the default ``min_gate``).

Why pooled, not token-level: AMAR's token form (mean over question tokens of the max
similarity to any passage token) was measured on the same encoder (``bench/gating_quality.py``,
12 questions x 24 passages). Both rank every answering passage above its same-subject
distractor (AUC 1.000), but pooled cosine leaves a much wider gap to unrelated passages
(answering 0.74 vs unrelated 0.02; token max-sim 0.77 vs 0.13, because every question
word-piece — "what", "is", "the" — finds a close match in any English passage), so one fixed
gate separates them more safely; it also costs less (one vector per passage, cacheable, instead
of one per token: 295 ms vs 397 ms there). With (a, b) = (12, 0.25) and ``min_gate`` 0.5 it
kept 100% of answering passages and 2% of unrelated ones.
Never drops every passage: the best one always stays, so detection is never run without context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from truthlens.modes.base import Embedder, GroundedQuery

GateMode = Literal["drop", "rank"]

# Gate calibration for the shipped encoder (see the module docstring and bench/gating_quality.py).
GATE_SCALE = 12.0
GATE_CENTER = 0.25


@dataclass(frozen=True, slots=True)
class EvidenceSettings:
    """The route's ``evidence:`` section."""

    enabled: bool = True
    min_gate: float = 0.5  # passages with g below this are dropped (drop) or sent last (rank)
    max_passages: int | None = None  # keep at most this many (highest g); None: no cap
    mode: GateMode = "drop"

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_gate <= 1.0:
            raise ValueError(f"min_gate must be in [0, 1], got {self.min_gate}")
        if self.max_passages is not None and self.max_passages < 1:
            raise ValueError(f"max_passages must be >= 1, got {self.max_passages}")
        if self.mode not in ("drop", "rank"):
            raise ValueError(f"mode must be 'drop' or 'rank', got {self.mode!r}")


@dataclass(frozen=True, slots=True)
class GatedQuery:
    query: GroundedQuery  # the query with the passages that go on
    held_back: tuple[str, ...]  # passages set aside, best first (ACR may ask for them later)
    gates: tuple[float, ...]  # g of every ORIGINAL passage, in the original order
    kept: tuple[int, ...]  # original indices of ``query.passages``, in their new order


def gate_value(similarity: float) -> float:
    x = GATE_SCALE * (similarity - GATE_CENTER)
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


async def passage_gates(question: str, passages: list[str], embedder: Embedder) -> list[float]:
    """g for each passage (pooled cosine through the gate)."""
    if not passages:
        return []
    vectors = np.asarray(await embedder.embed([question, *passages]), dtype=np.float32)
    sims = vectors[1:] @ vectors[0]
    return [gate_value(float(s)) for s in sims]


async def gate(query: GroundedQuery, settings: EvidenceSettings, embedder: Embedder) -> GatedQuery:
    passages = list(query.passages)
    if not settings.enabled or not passages:
        return GatedQuery(query, (), tuple(1.0 for _ in passages), tuple(range(len(passages))))
    gates = await passage_gates(query.question, passages, embedder)
    by_gate = sorted(range(len(passages)), key=lambda i: (-gates[i], i))
    passing = [i for i in by_gate if gates[i] >= settings.min_gate] or by_gate[:1]
    if settings.mode == "rank":
        # Everything stays, best first; the cap alone holds passages back.
        chosen = by_gate
    else:
        chosen = passing
    if settings.max_passages is not None:
        chosen = chosen[: settings.max_passages]
    if settings.mode == "drop":
        chosen = sorted(chosen)  # keep document order for the survivors
    chosen_set = set(chosen)
    held = tuple(passages[i] for i in by_gate if i not in chosen_set)
    new_query = replace(query, passages=tuple(passages[i] for i in chosen))
    return GatedQuery(new_query, held, tuple(gates), tuple(chosen))
