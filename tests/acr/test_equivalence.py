"""Answer equivalence and clustering with the real shipped embedder (nothing scripted)."""

from __future__ import annotations

import pytest

from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.modes.acr.equivalence import AnswerMatcher, facts_disagree


@pytest.fixture
def matcher(embedder: OnnxEmbedder) -> AnswerMatcher:
    return AnswerMatcher(embedder, threshold=0.85)


SAME = [
    ("Canberra", "The capital of Australia is Canberra."),
    ("Jane Austen wrote it.", "It was written by Jane Austen."),
    ("Paris", "Paris, France"),
    ("1889", "It was completed in 1889."),
]
DIFFERENT = [
    ("The capital of Australia is Sydney.", "The capital of Australia is Canberra."),
    ("The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1887."),
    ("Marie Curie", "Pierre Curie"),
    ("Yes", "No"),
    ("100 degrees Celsius", "90 degrees Celsius"),
]


async def test_same_and_different_answers(matcher: AnswerMatcher) -> None:
    await matcher.warm([t for pair in SAME + DIFFERENT for t in pair])
    for a, b in SAME:
        assert matcher.same(a, b), (a, b)
        assert matcher.same(b, a), (b, a)
    for a, b in DIFFERENT:
        assert not matcher.same(a, b), (a, b)


async def test_embeddings_alone_would_merge_conflicting_facts(matcher: AnswerMatcher) -> None:
    # Why the guard exists: the sentence vectors of conflicting facts are very close.
    a, b = "The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1887."
    await matcher.warm([a, b])
    assert matcher.cosine(a, b) > 0.85
    assert facts_disagree(a, b)


async def test_clusters_group_paraphrases(matcher: AnswerMatcher) -> None:
    answers = ["Canberra", "Sydney", "canberra", "It is Canberra.", "Melbourne", "Sydney."]
    groups = await matcher.clusters(answers)
    assert sorted(sorted(g) for g in groups) == [[0, 2, 3], [1, 5], [4]]
