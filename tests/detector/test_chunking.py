"""The chunk planner: every row fits, every passage and every answer token is covered.

Nothing is scripted: a real tokenizer (MiniLM vocabulary) plans real rows; no model runs.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from truthlens.detector.chunking import MAX_ROWS, answer_windows, plan_rows
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.prompt import build_prompt
from truthlens.detector.types import InvalidInput


@pytest.fixture(scope="module")
def encoder(tokenizer_file: Path) -> TextEncoder:
    return TextEncoder(tokenizer_file)


def _passages(n: int, words: int) -> list[str]:
    return [" ".join(f"fact{p}w{w}" for w in range(words)) + "." for p in range(n)]


def _prompt_text(encoder: TextEncoder, row_ids: np.ndarray, answer_start: int) -> str:
    return encoder._tokenizer.decode(row_ids[:answer_start].tolist())


def test_small_input_is_one_row_equal_to_the_plain_pair(encoder: TextEncoder) -> None:
    context, question, answer = ["Paris is the capital of France."], "Capital?", "Paris."
    plan = plan_rows(encoder, context, question, encoder.encode(answer), max_length=512, answer_overlap_tokens=32)
    assert len(plan.rows) == 1 and plan.chunks == 1
    expected = encoder.pair(encoder.encode(build_prompt(context, question)).ids, encoder.encode(answer).ids)
    assert plan.rows[0].ids.tolist() == expected.ids.tolist()


def test_long_context_is_split_into_fitting_chunks_that_keep_every_passage(encoder: TextEncoder) -> None:
    context = _passages(40, 30)
    answer = encoder.encode("The answer mentions fact3w1 and something else entirely.")
    plan = plan_rows(encoder, context, "Which facts?", answer, max_length=128, answer_overlap_tokens=8)
    assert plan.chunks > 1 and len(plan.rows) == plan.chunks
    seen = ""
    for row in plan.rows:
        assert row.length <= 128
        assert row.answer_len == len(answer)
        assert row.ids[row.answer_start : row.answer_start + row.answer_len].tolist() == answer.ids.tolist()
        seen += _prompt_text(encoder, row.ids, row.answer_start)
    for p in range(40):
        assert f"fact{p}w29" in seen.replace(" ", "")


def test_one_huge_passage_is_cut_with_overlap(encoder: TextEncoder) -> None:
    huge = " ".join(f"tok{i}" for i in range(3000))
    answer = encoder.encode("short answer")
    plan = plan_rows(encoder, [huge], "q", answer, max_length=256, answer_overlap_tokens=8)
    assert plan.chunks > 5
    texts = [_prompt_text(encoder, r.ids, r.answer_start).replace(" ", "") for r in plan.rows]
    assert all(r.length <= 256 for r in plan.rows)
    for i in (0, 1234, 2999):
        assert any(f"tok{i}" in t for t in texts)
    # consecutive pieces share the words around each cut
    shared = [set(a.split("tok")) & set(b.split("tok")) for a, b in itertools.pairwise(texts)]
    assert all(len(s) > 3 for s in shared)


def test_long_answer_windows_cover_every_token_with_overlap(encoder: TextEncoder) -> None:
    answer = encoder.encode(" ".join(f"claim{i}" for i in range(400)))
    plan = plan_rows(encoder, _passages(3, 10), "q", answer, max_length=128, answer_overlap_tokens=8)
    covered = np.zeros(len(answer), dtype=int)
    for row, window in zip(plan.rows, plan.windows, strict=True):
        assert row.length <= 128
        assert row.answer_len == window.end - window.start
        covered[window.start : window.end] += 1
    assert covered.min() >= 1
    assert covered.max() >= 2  # overlap between windows
    assert plan.windows[-1].end == len(answer)


def test_empty_context_still_gives_a_row(encoder: TextEncoder) -> None:
    plan = plan_rows(encoder, [], "q", encoder.encode("An answer."), max_length=128, answer_overlap_tokens=8)
    assert len(plan.rows) == 1
    assert "passage 1" not in _prompt_text(encoder, plan.rows[0].ids, plan.rows[0].answer_start)
    assert "0 passages" in _prompt_text(encoder, plan.rows[0].ids, plan.rows[0].answer_start)


def test_huge_question_is_cut_to_its_end(encoder: TextEncoder) -> None:
    question = " ".join(f"pre{i}" for i in range(500)) + " what is the final question"
    plan = plan_rows(encoder, ["p"], question, encoder.encode("a"), max_length=128, answer_overlap_tokens=8)
    text = _prompt_text(encoder, plan.rows[0].ids, plan.rows[0].answer_start)
    assert "what is the final question" in text and "pre0 " not in text


def test_answer_windows_arithmetic() -> None:
    assert [(w.start, w.end) for w in answer_windows(10, 20, 4)] == [(0, 10)]
    windows = answer_windows(100, 40, 10)
    assert [(w.start, w.end) for w in windows] == [(0, 40), (30, 70), (60, 100)]
    # overlap is capped at half a window so the number of windows stays linear
    assert len(answer_windows(1000, 40, 1000)) == len(answer_windows(1000, 40, 20))
    with pytest.raises(InvalidInput):
        answer_windows(10, 4, 0)


def test_too_many_rows_is_refused(encoder: TextEncoder) -> None:
    context = ["word " * 400] * (MAX_ROWS // 8)
    answer = encoder.encode("claim " * 300)
    with pytest.raises(InvalidInput, match="over the limit"):
        plan_rows(encoder, context, "q", answer, max_length=128, answer_overlap_tokens=8)
