"""Token probabilities → spans and scores.

Nothing is scripted: probabilities are given directly (the function under test is pure);
the multi-byte test uses the real tokenizer's offsets.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from truthlens.detector.encoding import TextEncoder
from truthlens.detector.spans import SpanRules, score_answer

RULES = SpanRules(token_threshold=0.5, aggregation="noisy_or")


def _offsets(pairs: list[tuple[int, int]]) -> np.ndarray:
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def test_consecutive_tokens_merge_into_one_span() -> None:
    answer = "Paris is in Germany now."
    offsets = _offsets([(0, 5), (6, 8), (9, 11), (12, 19), (20, 23), (23, 24)])
    probs = np.array([0.1, 0.2, 0.7, 0.9, 0.3, 0.1], dtype=np.float32)
    score, spans = score_answer(probs, offsets, answer, RULES)
    assert [(s.start, s.end, s.text) for s in spans] == [(9, 19, "in Germany")]
    assert spans[0].prob == pytest.approx(0.9)
    assert score == pytest.approx(1 - (1 - 0.7) * (1 - 0.9))


def test_separate_runs_and_noisy_or_vs_max_span() -> None:
    answer = "aa bb cc dd"
    offsets = _offsets([(0, 2), (3, 5), (6, 8), (9, 11)])
    probs = np.array([0.6, 0.1, 0.8, 0.2], dtype=np.float32)
    score, spans = score_answer(probs, offsets, answer, RULES)
    assert [s.text for s in spans] == ["aa", "cc"]
    assert score == pytest.approx(1 - 0.4 * 0.2)
    max_score, _ = score_answer(probs, offsets, answer, SpanRules(0.5, "max_span"))
    assert max_score == pytest.approx(0.8)


def test_threshold_is_strict_and_clean_scores_zero() -> None:
    offsets = _offsets([(0, 1), (2, 3)])
    score, spans = score_answer(np.array([0.5, 0.49], dtype=np.float32), offsets, "a b", RULES)
    assert spans == () and score == 0.0


def test_zero_width_tokens_neither_start_nor_break_a_run() -> None:
    answer = "ab cd"
    offsets = _offsets([(0, 2), (2, 2), (3, 5)])
    probs = np.array([0.9, 0.0, 0.8], dtype=np.float32)
    _, spans = score_answer(probs, offsets, answer, RULES)
    assert [s.text for s in spans] == ["ab cd"]
    _, none = score_answer(np.array([0.1, 0.99, 0.1], dtype=np.float32), offsets, answer, RULES)
    assert none == ()


def test_overlapping_byte_level_pieces_merge() -> None:
    # Byte-level BPE gives each piece of one emoji the same char range.
    answer = "x 😀 y"
    offsets = _offsets([(0, 1), (2, 3), (2, 3), (2, 3), (4, 5)])
    probs = np.array([0.1, 0.9, 0.2, 0.7, 0.1], dtype=np.float32)
    _, spans = score_answer(probs, offsets, answer, RULES)
    assert [(s.start, s.end, s.text) for s in spans] == [(2, 3, "😀")]
    assert spans[0].prob == pytest.approx(0.9)


def test_filters_drop_spans_and_their_score() -> None:
    answer = "a bbbbbb c"
    offsets = _offsets([(0, 1), (2, 8), (9, 10)])
    probs = np.array([0.95, 0.6, 0.2], dtype=np.float32)
    score, spans = score_answer(probs, offsets, answer, SpanRules(0.5, "noisy_or", min_span_length=2))
    assert [s.text for s in spans] == ["a bbbbbb"]
    score, spans = score_answer(probs, offsets, answer, SpanRules(0.5, "noisy_or", min_span_length=9))
    assert spans == () and score == 0.0
    offsets2 = _offsets([(0, 1), (2, 8), (9, 10)])
    probs2 = np.array([0.55, 0.1, 0.9], dtype=np.float32)
    score, spans = score_answer(probs2, offsets2, answer, SpanRules(0.5, "max_span", min_span_confidence=0.6))
    assert [s.text for s in spans] == ["c"] and score == pytest.approx(0.9)


def test_noisy_or_of_many_tokens_stays_a_probability() -> None:
    n = 5000
    offsets = _offsets([(2 * i, 2 * i + 1) for i in range(n)])
    score, spans = score_answer(np.full(n, 0.99, dtype=np.float32), offsets, "a " * n, RULES)
    assert len(spans) == 1 and score == pytest.approx(1.0) and not math.isnan(score)


def test_multibyte_offsets_from_the_real_tokenizer(tokenizer_file: Path) -> None:
    encoder = TextEncoder(tokenizer_file)
    answer = "Le café 😀 est à 北京, très cher."
    encoded = encoder.encode(answer)
    pieces = [answer[s:e] for s, e in encoded.offsets.tolist()]
    probs = np.array([0.9 if p in ("😀", "北", "京") else 0.05 for p in pieces], dtype=np.float32)
    _, spans = score_answer(probs, encoded.offsets, answer, RULES)
    assert [s.text for s in spans] == ["😀", "北京"]
    for span in spans:
        assert answer[span.start : span.end] == span.text


def test_span_mean_scores_the_best_span_as_a_whole() -> None:
    answer = "aa bb cc dd"
    offsets = _offsets([(0, 2), (3, 5), (6, 8), (9, 11)])
    probs = np.array([0.95, 0.55, 0.1, 0.7], dtype=np.float32)
    score, spans = score_answer(probs, offsets, answer, SpanRules(0.5, "span_mean"))
    assert [s.text for s in spans] == ["aa bb", "dd"]
    # "aa bb" averages 0.75, "dd" 0.7: the best span's mean, not its peak, not a product.
    assert score == pytest.approx(0.75)


def test_max_span_and_span_mean_do_not_grow_with_the_number_of_spans() -> None:
    one = np.array([0.7, 0.1, 0.1, 0.1], dtype=np.float32)
    many = np.array([0.7, 0.1, 0.7, 0.7], dtype=np.float32)
    offsets = _offsets([(0, 2), (3, 5), (6, 8), (9, 11)])
    for aggregation in ("max_span", "span_mean"):
        rules = SpanRules(0.5, aggregation)  # type: ignore[arg-type]
        assert score_answer(one, offsets, "aa bb cc dd", rules)[0] == pytest.approx(
            score_answer(many, offsets, "aa bb cc dd", rules)[0]
        )
    noisy = SpanRules(0.5, "noisy_or")
    assert score_answer(many, offsets, "aa bb cc dd", noisy)[0] > score_answer(one, offsets, "aa bb cc dd", noisy)[0]
