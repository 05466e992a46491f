"""``grounded`` rows: claims and pieces, row budgets, rows linear in the context, relevance.

The tiny lookup model (flags a few words whatever the context) makes the token bookkeeping
exact; the real sentence embedder and the word-overlap ranking pick the rows' context.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from truthlens.detector.backends.factory import check_settings, create_detector
from truthlens.detector.chunking import Plan, Window
from truthlens.detector.encoding import EncodedText, TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.grounding import (
    MAX_CLAIM_ROWS,
    PIECE_TOKENS,
    claim_ranges,
    context_pieces,
    plan_grounded,
)
from truthlens.detector.prompt import checked, model_questions
from truthlens.detector.relevance import (
    EmbeddingRelevance,
    LexicalRelevance,
    Relevance,
    content_terms,
    lexical_overlap,
)
from truthlens.detector.scoring.token_scorer import aggregate, distinct_rows
from truthlens.detector.text import sentence_starts
from truthlens.detector.types import DetectionInput, DetectorSettings

TOPICS = ("harbour", "railway", "museum", "orchard", "brewery", "glacier", "library", "stadium")


@pytest.fixture(scope="module")
def encoder(tokenizer_file: Path) -> TextEncoder:
    return TextEncoder(tokenizer_file)


def _distractors(count: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [
        f"The {rng.choice(TOPICS)} of Vellmoor was rebuilt in {rng.randint(1900, 2000)}. "
        f"Visitors count {rng.randint(100, 9000)} steps to the top. The {rng.choice(TOPICS)} closes at dusk."
        for _ in range(count)
    ]


EVIDENCE = "The Quillan observatory stands on Mount Arvel. Its telescope mirror is 4.2 metres wide."
ANSWER = "The Quillan observatory stands on Mount Arvel. Its mirror is 4.2 metres wide. It opened in 1925."


def _detector(model_dir: Path, **overrides: object) -> DetectorEngine:
    settings = DetectorSettings(model_dir=str(model_dir), provider="cpu", intra_op_threads=1, evidence_checks=False, **overrides)  # type: ignore[arg-type]
    detector = create_detector(settings)
    assert isinstance(detector, DetectorEngine)
    return detector


def test_sentence_starts_and_claims_cover_the_answer(encoder: TextEncoder) -> None:
    text = 'He said "yes." Then he left!  It was 3.5 km.\nNext line'
    starts = sentence_starts(text)
    assert [text[s : s + 4] for s in starts] == ['He s', 'Then', 'It w', 'Next']
    encoded = encoder.encode(text)
    claims = claim_ranges(text, encoded, width=200)
    assert claims[0].start == 0 and claims[-1].end == len(encoded)
    assert all(a.end == b.start for a, b in zip(claims, claims[1:], strict=False))
    assert len(claims) == 4  # "3.5" does not end a sentence
    # A window narrower than a sentence cuts it; nothing is lost.
    narrow = claim_ranges(text, encoded, width=5)
    assert all(c.end - c.start <= 5 for c in narrow) and sum(c.end - c.start for c in narrow) == len(encoded)


def test_claims_are_capped_for_a_long_answer(encoder: TextEncoder) -> None:
    text = " ".join(f"Fact number {i} is true." for i in range(400))
    claims = claim_ranges(text, encoder.encode(text), width=300)
    assert len(claims) <= MAX_CLAIM_ROWS + 1
    assert sum(c.end - c.start for c in claims) == len(encoder.encode(text))


def test_pieces_keep_short_passages_whole_and_cut_long_ones_at_sentences(encoder: TextEncoder) -> None:
    long_passage = " ".join(_distractors(30))
    pieces = context_pieces(encoder, ["Short one.", "", long_passage])
    assert pieces[0].passage == 0 and (pieces[0].start, pieces[0].end) == (0, len("Short one."))
    cut = [p for p in pieces if p.passage == 2]
    assert len(cut) > 5 and all(p.tokens <= PIECE_TOKENS for p in cut)
    assert all(a.end == b.start for a, b in zip(cut, cut[1:], strict=False)) and cut[-1].end == len(long_passage)
    assert {p.start for p in cut} <= set(sentence_starts(long_passage))  # whole sentences


def test_lexical_overlap_weights_rare_words(encoder: TextEncoder) -> None:
    assert content_terms("About 4,120 people work for the Museum.") == {"4120", "people", "work", "museum"}
    pieces = ["The museum has 4,120 visitors.", "The museum opened late.", "The museum is old."]
    scores = lexical_overlap(["The museum has 4,120 visitors."], pieces)[0]
    assert scores[0] == pytest.approx(1.0) and scores[0] > scores[1] > 0 and scores[1] == pytest.approx(scores[2])


@pytest.mark.parametrize("relevance", ["embedding", "lexical"])
def test_each_claim_row_holds_its_evidence_within_the_window(encoder: TextEncoder, relevance: str) -> None:
    ranker: Relevance = LexicalRelevance()
    if relevance == "embedding":
        from truthlens.evidence.embedder import OnnxEmbedder

        ranker = EmbeddingRelevance(OnnxEmbedder.load())
    context = _distractors(120)
    context.insert(70, EVIDENCE)
    answer = encoder.encode(ANSWER)
    plan = plan_grounded(encoder, context, "Tell me about it.", ANSWER, answer, ranker, max_length=512, answer_overlap_tokens=32)
    assert len(plan.rows) == 3 and all(r.length <= 512 for r in plan.rows)
    assert [(w.start, w.end) for w in plan.windows] == [(0, len(answer))] * 3  # the whole answer in every row
    assert plan.scored[0].start == 0 and plan.scored[-1].end == len(answer)
    evidence_ids = encoder.encode("Quillan observatory stands on Mount Arvel").ids.tolist()
    for row in plan.rows[:2]:  # the two claims the evidence states
        assert _contains(row.ids[: row.answer_start].tolist(), evidence_ids)


def _contains(haystack: list[int], needle: list[int]) -> bool:
    return any(haystack[i : i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


async def test_grounded_rows_do_not_grow_with_the_context(tiny_model_dir: Path, encoder: TextEncoder) -> None:
    """Model rows at two context sizes: grounded stays at one per answer sentence, max grows
    with the context (the embedding pass is the only part linear in the context)."""
    grounded, by_max = _detector(tiny_model_dir), _detector(tiny_model_dir, chunk_aggregation="max")
    rows = {}
    for count in (60, 240):
        context = _distractors(count)
        context.insert(count // 2, EVIDENCE)
        tokens = sum(len(encoder.encode(p)) for p in context)
        item = DetectionInput(tuple(context), "Tell me about it.", ANSWER)
        g, m = await grounded.detect(item, threshold=0.5), await by_max.detect(item, threshold=0.5)
        rows[count] = (tokens, g.chunks, m.chunks)
        # The tiny model flags "1925" wherever it is: exactly that span, read from its own row.
        assert [s.text for s in g.spans] == ["1925"] and g.spans[0].start == ANSWER.index("1925")
    await grounded.close()
    await by_max.close()
    (small_tokens, small_g, small_m), (big_tokens, big_g, big_m) = rows[60], rows[240]
    assert big_tokens > 3.5 * small_tokens > 3.5 * 1500
    # At most one row per answer sentence under each wording the model scores this request in
    # ("Tell me about it." over the passages reads as a summary request: the canonical summary's
    # wordings); claims whose evidence lies in another claim's row share it, so fewer may run.
    assert small_g == big_g and _wordings(item) <= big_g <= 3 * _wordings(item)
    assert big_m >= 3 * small_m


async def test_a_context_that_fits_gives_the_same_single_row(tiny_model_dir: Path) -> None:
    grounded, by_max = _detector(tiny_model_dir), _detector(tiny_model_dir, chunk_aggregation="max")
    item = DetectionInput((EVIDENCE, *_distractors(3)), "Tell me about it.", ANSWER)
    g, m = await grounded.detect(item, threshold=0.5), await by_max.detect(item, threshold=0.5)
    await grounded.close()
    await by_max.close()
    # A single row under each wording the model scores this request in, for both aggregations.
    assert g.chunks == m.chunks == _wordings(item) and g.score == m.score and g.spans == m.spans


def _wordings(item: DetectionInput) -> int:
    """How many wordings of its question the model scores ``item``'s answer under."""
    return len(model_questions(checked(item).question))


async def test_claims_with_the_same_row_share_one_run(tiny_model_dir: Path) -> None:
    """Three equal sentences pick the same context: one model run (``chunks`` counts the rows
    run), and each claim still reads its own tokens from it."""
    detector = _detector(tiny_model_dir)
    context = _distractors(60)
    context.insert(30, EVIDENCE)
    answer = "It opened in 1925. It opened in 1925. It opened in 1925."
    result = await detector.detect(DetectionInput(tuple(context), "When did it open?", answer), threshold=0.5)
    stats = detector.batcher.stats
    await detector.close()
    assert result.chunks == 1 and stats.rows == 1
    starts = [i for i in range(len(answer)) if answer.startswith("1925", i)]
    assert [(s.start, s.text) for s in result.spans] == [(i, "1925") for i in starts]


def test_distinct_rows_index_each_row_to_its_first_equal(encoder: TextEncoder) -> None:
    a, b = encoder.encode("first prompt").ids, encoder.encode("second prompt").ids
    answer = encoder.encode("the answer").ids
    rows = [encoder.pair(a, answer), encoder.pair(b, answer), encoder.pair(a, answer), encoder.pair(b, answer[:1])]
    distinct, index = distinct_rows(rows)
    assert index == [0, 1, 0, 2]
    assert [d.ids.tolist() for d in distinct] == [rows[0].ids.tolist(), rows[1].ids.tolist(), rows[3].ids.tolist()]


def test_aggregate_reads_each_claim_from_its_own_row() -> None:
    plan = Plan(rows=(), windows=(Window(0, 4), Window(0, 4)), chunks=1, scored=(Window(0, 2), Window(2, 4)))
    outputs = [np.array([0.1, 0.2, 0.9, 0.9], dtype=np.float32), np.array([0.8, 0.8, 0.3, 0.4], dtype=np.float32)]
    assert aggregate(4, plan, outputs, "grounded").tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4])


def test_settings_accept_grounded_and_name_a_bad_value() -> None:
    check_settings(DetectorSettings(chunk_aggregation="grounded"))
    assert DetectorSettings().chunk_aggregation == "grounded"
    with pytest.raises(ValueError, match="chunk_aggregation 'mean' is not one of grounded, max, min, best"):
        check_settings(DetectorSettings(chunk_aggregation="mean"))  # type: ignore[arg-type]


def test_one_row_holds_every_claims_best_pieces_when_they_fit() -> None:
    """``covering_rows``: the claims' pieces taken in turns (each claim's best, then each one's
    second, ...) into one row while they fit; every claim whose best piece is in reads from it."""
    from truthlens.detector.grounding import covering_rows

    whole = Window(0, 40)
    picks = [[0, 1, 2], [3, 0], [4], [0]]
    costs = [50] * 5
    rows = covering_rows([whole] * 4, picks, costs, room=40 + 5 * 50, cover=1)
    assert [(members, pieces) for _, members, pieces in rows] == [([0, 1, 2, 3], [0, 3, 4, 1, 2])]
    # Room for three pieces: the claims' best pieces go first, the second ones wait their turn.
    rows = covering_rows([whole] * 4, picks, costs, room=40 + 3 * 50, cover=1)
    assert [(members, pieces) for _, members, pieces in rows] == [([0, 1, 2, 3], [0, 3, 4])]


def test_an_extra_row_only_for_the_claims_whose_evidence_is_missing_and_only_their_pieces() -> None:
    from truthlens.detector.grounding import covering_rows

    whole = Window(0, 40)
    picks = [[0, 1], [2, 3], [4], [5, 0]]
    costs = [100, 30, 100, 30, 100, 100]
    room = 40 + 300  # three 100-token pieces
    rows = covering_rows([whole] * 4, picks, costs, room, cover=1)
    # Round one takes 0, 2, 4 (300 tokens); claim 3's best (piece 5) does not fit: an extra row
    # with its pieces alone, 200 tokens where the first row has 300.
    assert [(members, pieces) for _, members, pieces in rows] == [([0, 1, 2], [0, 2, 4]), ([3], [5, 0])]
    # Covering two picks: claim 0's second piece does not fit beside the three best pieces. The
    # first claim waiting never waits again: it opens a row of its own pieces, and the claims
    # whose pieces a row holds read from it.
    rows = covering_rows([whole] * 4, picks, costs, room, cover=2)
    assert [(members, pieces) for _, members, pieces in rows] == [([0], [0, 1]), ([1], [2, 3]),
                                                                  ([2, 3], [4, 5, 0])]
    # Every claim is placed exactly once, whatever the cover.
    for cover in (1, 2, None):
        placed = [m for _, members, _ in covering_rows([whole] * 4, picks, costs, room, cover) for m in members]
        assert sorted(placed) == [0, 1, 2, 3]


def test_claims_of_different_answer_windows_never_share_a_row() -> None:
    """A long answer's claims sit in different windows: a row holds one window's answer tokens."""
    from truthlens.detector.grounding import covering_rows

    first, second = Window(0, 300), Window(200, 500)
    rows = covering_rows([first, second, first], [[0], [0], [1]], [20, 20], room=600, cover=1)
    assert [(w, members, pieces) for w, members, pieces in rows] == [(first, [0, 2], [0, 1]), (second, [1], [0])]


def test_a_claim_with_no_piece_reads_the_first_row() -> None:
    from truthlens.detector.grounding import covering_rows

    whole = Window(0, 10)
    rows = covering_rows([whole] * 2, [[], [1]], [10, 10], room=100, cover=None)
    assert [(members, pieces) for _, members, pieces in rows] == [([0, 1], [1])]


_PLACES = (("Quillan", "bridge", "crosses", "Arvel river"), ("Marrow", "tower", "overlooks", "Sennet bay"),
           ("Tessel", "mill", "grinds", "barley from Oskar"), ("Orvin", "gate", "guards", "the Pellam road"),
           ("Bellac", "well", "feeds", "the Dunmore gardens"))


def _long_passage(name: str, thing: str, verb: str, what: str, tokens: int, encoder: TextEncoder) -> str:
    """A passage that states "The {name} {thing} {verb} {what}." and goes on about it to ``tokens``."""
    text = f"The {name} {thing} {verb} {what}."
    extra = 0
    while len(encoder.encode(f"{text} {name} records, volume {extra}.")) <= tokens:
        text = f"{text} {name} records, volume {extra}."
        extra += 1
    return text


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_claims_share_one_row_until_their_evidence_overflows_it(encoder: TextEncoder, seed: int) -> None:
    """Over the window: the claims whose passages fit one row beside the answer read from it; the
    rest get a row holding only their passages, shorter than the window; every claim's row holds
    the passage that states it (word-overlap ranking, so the rows are exact)."""
    rng = random.Random(seed)
    places = rng.sample(_PLACES, 5)
    passages = [_long_passage(*p, tokens=90, encoder=encoder) for p in places]
    assert all(len(encoder.encode(p)) <= PIECE_TOKENS for p in passages)
    context = _distractors(60, seed=seed)
    for i, passage in enumerate(passages):
        context.insert(7 + 11 * i, passage)
    answer_text = " ".join(f"The {n} {t} {v} {w}." for n, t, v, w in places)
    answer = encoder.encode(answer_text)
    plan = plan_grounded(encoder, context, "Tell me about the places.", answer_text, answer, LexicalRelevance(),
                         max_length=512, answer_overlap_tokens=32)
    distinct, index = distinct_rows(plan.rows)
    # Five 90-token passages do not fit beside the answer in one 512-token row: two rows, the
    # second only as long as the passages its claims lack.
    assert len(distinct) == 2 and index[0] == 0
    assert all(r.length <= 512 for r in distinct) and distinct[1].length < distinct[0].length
    for claim, row in zip(plan.scored, plan.rows, strict=True):
        stated = answer_text[_offset(answer, claim.start) : _offset(answer, claim.end - 1, end=True)]
        passage = next(p for p in passages if p.startswith(stated.rstrip(".")))
        assert _contains(row.ids[: row.answer_start].tolist(), encoder.encode(passage[:40]).ids.tolist()[1:-1])


def _offset(answer: EncodedText, token: int, end: bool = False) -> int:
    return int(answer.offsets[token, 1 if end else 0])
