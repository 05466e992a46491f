"""Long contexts: only a shortlist of pieces (each claim's best by word overlap) is embedded.

Real sentence embedder (the shipped all-MiniLM-L6-v2 ONNX graph in ONNX Runtime) and real
tokenizer; ``Recording`` only remembers which texts reached the real embedder. Nothing is
scripted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from truthlens.detector import relevance
from truthlens.detector.relevance import SHORTLIST_FROM, SHORTLIST_PER_CLAIM, EmbeddingRelevance, shortlist

STATES = "The Harwick bridge over the Ouse opened in 1932 and is 412 metres long."
PARAPHRASE = "Spanning the Ouse, Harwick's crossing first carried traffic in 1932."
CLAIMS = ["The Harwick bridge opened in 1932.", "It is 412 metres long."]


def _filler(n: int) -> list[str]:
    towns = ("Tartu", "Porto", "Oulu", "Cusco", "Glarus", "Khulna")
    return [f"The market hall of {towns[i % 6]} number {i} sells fish, bread and cheese every morning." for i in range(n)]


class Recording:
    """The real embedder, remembering the texts each call asked for."""

    def __init__(self) -> None:
        from truthlens.evidence.embedder import OnnxEmbedder

        # The embedder ships in the package: failing to load it is a failure, never a skip.
        self._inner = OnnxEmbedder.load(intra_op_threads=1, cache_size=0)
        self.calls: list[list[str]] = []

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self._inner.embed_sync(texts)


def test_shortlist_keeps_every_piece_of_a_short_context_and_each_claims_best_of_a_long_one() -> None:
    rng = np.random.default_rng(0)
    short = rng.random((3, SHORTLIST_FROM))
    assert shortlist(short) == list(range(SHORTLIST_FROM))
    long = rng.random((3, 200))
    chosen = shortlist(long)
    assert len(chosen) <= 3 * SHORTLIST_PER_CLAIM and chosen == sorted(chosen)
    for row in long:
        assert set(np.argsort(-row)[:SHORTLIST_PER_CLAIM].tolist()) <= set(chosen)


def test_a_long_context_embeds_a_shortlist_and_still_ranks_the_stating_piece_first() -> None:
    encoder = Recording()
    pieces = _filler(60)
    pieces[41] = STATES
    scores = EmbeddingRelevance(encoder).scores(CLAIMS, pieces)

    embedded = encoder.calls[-1][len(CLAIMS):]
    assert STATES in embedded and len(embedded) <= len(CLAIMS) * SHORTLIST_PER_CLAIM < len(pieces)
    assert [int(np.argmax(row)) for row in scores] == [41, 41]
    left_out = [i for i, p in enumerate(pieces) if p not in embedded]
    assert scores[:, left_out].max() < scores[:, 41].min() - 0.3  # outside any row's relevance margin


def test_a_short_context_is_ranked_exactly_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = Recording()
    pieces = [*_filler(20), PARAPHRASE]
    got = EmbeddingRelevance(encoder).scores(CLAIMS, pieces)
    assert encoder.calls[-1] == [*CLAIMS, *pieces]  # every piece embedded, in order
    monkeypatch.setattr(relevance, "SHORTLIST_FROM", 10_000)
    np.testing.assert_allclose(EmbeddingRelevance(encoder).scores(CLAIMS, pieces), got, atol=1e-6)
