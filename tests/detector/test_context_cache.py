"""What a check keeps of a context for the next answer on it: the bound, and that it changes nothing.

``Memo`` (bounded LRU keyed by content) on its own; the tokenizer's cache against a fresh
tokenizer; and with the shipped model (real ONNX Runtime, real embedder), a second answer on a
context already checked gets exactly the verdict, score, spans and token probabilities a fresh
detector gives it. The contexts are generated from a seed (several passages, longer than one
row, so the grounded planner cuts pieces and ranks them).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from truthlens.detector import relevance
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.relevance import lexical_overlap
from truthlens.detector.scoring.memo import Memo
from truthlens.detector.types import DetectionInput, DetectorSettings

PLACES = ("Vellmoor", "Arvel", "Quillan", "Tormund", "Kesh", "Orlau", "Brisk", "Nandor")
THINGS = ("harbour", "railway", "museum", "orchard", "brewery", "glacier", "library", "stadium")


def test_memo_keeps_the_newest_within_its_entry_and_size_bounds() -> None:
    memo: Memo[str, str] = Memo(max_entries=4, max_size=10, size=len)
    for key in ("a", "b", "c"):
        assert memo.get(key, lambda k=key: k * 2) == key * 2  # type: ignore[misc]
    assert memo.get("a", lambda: "never") == "aa"  # a hit: "a" becomes the newest
    memo.get("d", lambda: "dd")
    # Five entries of 2+2+2+2+6 characters: "b" goes for the entry bound, "c" for the size
    # bound; "a", used since, stays.
    memo.get("e", lambda: "eeeeee")
    assert [memo.peek(k) for k in "abcde"] == [True, False, False, True, True]
    memo.get("f", lambda: "f" * 11)  # larger than the whole cache: returned, never kept
    assert not memo.peek("f") and memo.peek("e")
    assert memo.hits == 1 and memo.misses == 6


def test_cached_encodings_equal_a_fresh_tokenizers_and_cannot_be_written(tokenizer_file: Path) -> None:
    cached, fresh = TextEncoder(tokenizer_file), TextEncoder(tokenizer_file)
    texts = ["The harbour of Vellmoor was rebuilt in 1932.", "It closes at dusk.", "The harbour of Vellmoor was rebuilt in 1932."]
    cached.encode(texts[1])  # one text already known, one repeated within the call
    for a, b in zip(cached.encode_many(texts), [fresh.encode(t) for t in texts], strict=True):
        assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
    assert cached.count(texts[0]) == len(fresh.encode(texts[0]))
    with pytest.raises(ValueError, match="read-only"):
        cached.encode(texts[0]).ids[0] = 0


def test_cached_word_postings_give_the_overlap_of_the_texts_not_of_the_cache() -> None:
    pieces = ["The harbour opened in 1932.", "The railway opened in 1987."]
    first = lexical_overlap(["The harbour opened in 1932."], pieces)
    again = lexical_overlap(["The railway opened in 1987."], list(pieces))  # same pieces: cached postings
    changed = lexical_overlap(["The railway opened in 1987."], [pieces[0], "The railway closed."])
    assert first[0, 0] > first[0, 1] and again[0, 1] > again[0, 0]
    assert changed[0, 1] < again[0, 1]  # a changed piece is a new context, never the cached one


def _context(rng: random.Random) -> tuple[str, ...]:
    passages = []
    for _ in range(rng.randint(14, 20)):
        place, thing = rng.choice(PLACES), rng.choice(THINGS)
        passages.append(
            f"The {thing} of {place} was rebuilt in {rng.randint(1900, 2000)}. Visitors count "
            f"{rng.randint(100, 9000)} steps to the top of the {thing}. The {thing} of {place} closes at dusk, "
            f"and its keeper, {rng.choice(PLACES)} {rng.choice(PLACES)}son, lives in {rng.choice(PLACES)}."
        )
    return tuple(passages)


def _answer(context: tuple[str, ...], rng: random.Random, *, wrong: bool) -> str:
    first, second = rng.sample(context, 2)
    text = first.split(". ")[0] + ". " + second.split(". ")[1] + "."
    if wrong:  # a year the context never states
        text = text.replace(first.split(" in ")[1][:4], "1899", 1)
    return text


def _engine(model_dir: Path) -> DetectorEngine:
    engine = create_detector(DetectorSettings(model_dir=str(model_dir), provider="cpu", max_in_flight=2))
    assert isinstance(engine, DetectorEngine)
    return engine


async def test_a_second_answer_on_a_checked_context_gets_the_uncached_verdict(shipped_model_dir: Path) -> None:
    rng = random.Random(2054)
    warm = _engine(shipped_model_dir)
    try:
        for case in range(3):
            context = _context(rng)
            question = "Tell me about the landmarks."
            first = DetectionInput(context, question, _answer(context, rng, wrong=case % 2 == 0))
            second = DetectionInput(context, question, _answer(context, rng, wrong=case % 2 == 1))
            await warm.detect(first, threshold=0.5)
            hits = warm._scorer._encoder._cache.hits
            again = await warm.detect(second, threshold=0.5)
            again_probs = (await warm.token_scores(second)).probs
            assert warm._scorer._encoder._cache.hits > hits, "the second answer did not reuse the context"
            # Nothing cached: a new detector (its own tokenizer and embedder), the postings cleared.
            relevance.POSTINGS.clear()
            cold = _engine(shipped_model_dir)
            try:
                alone = await cold.detect(second, threshold=0.5)
                relevance.POSTINGS.clear()
                alone_probs = (await _engine_probs(shipped_model_dir, second))
            finally:
                await cold.close()
            assert (again.status, again.score, again.chunks) == (alone.status, alone.score, alone.chunks)
            assert [(s.start, s.end, s.reason) for s in again.spans] == [(s.start, s.end, s.reason) for s in alone.spans]
            assert np.array_equal(again_probs, alone_probs)
            assert again.chunks >= 1 and warm._scorer._encoder.count(" ".join(context)) > 512  # pieces, not one row
    finally:
        await warm.close()


async def _engine_probs(model_dir: Path, item: DetectionInput) -> np.ndarray:
    engine = _engine(model_dir)
    try:
        return (await engine.token_scores(item)).probs
    finally:
        await engine.close()
