"""Plan the model rows of one check so the whole answer is always scored.

A row is ``prompt(passages of one chunk) + one answer window``. Passages are grouped
greedily into chunks that fit beside the answer window (a passage too long for any chunk
is cut into overlapping pieces); an answer too long for one row is cut into overlapping
windows. Every window is paired with every chunk, and the caller combines each answer
token's probability over the rows that saw it (``chunk_aggregation`` max | min | best).
:mod:`truthlens.detector.grounding` plans the default ``grounded`` rows from the same layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from truthlens.detector.encoding import EncodedText, ModelRow, TextEncoder
from truthlens.detector.prompt import build_prompt, passage_line, prompt_head, prompt_tail
from truthlens.detector.types import InvalidInput

# An answer window leaves at least this share of the row to context, so a long answer
# cannot squeeze the passages out.
MIN_CONTEXT_SHARE = 0.25
# The question (repeated in every chunk) gets at most this share of the row; longer ones
# keep their end, where the actual question usually is.
MAX_QUESTION_SHARE = 0.25
# Consecutive pieces of a split passage share this many tokens, so a fact across the cut
# is whole in at least one piece.
PASSAGE_OVERLAP_TOKENS = 32
# Hard cap on rows for one check: a bigger input is refused rather than queued for minutes.
MAX_ROWS = 4096


@dataclass(frozen=True, slots=True)
class Window:
    """A slice ``[start, end)`` of the answer's tokens."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Plan:
    """The rows of one check and which answer tokens each row scores.

    Rows are window-major: ``chunks`` consecutive rows pair one answer window with each
    context chunk in order.
    """

    rows: tuple[ModelRow, ...]
    windows: tuple[Window, ...]  # windows[i] is the answer window of rows[i]
    chunks: int  # context chunks per answer window
    # Grounded plans (src/truthlens/detector/grounding.py): scored[i] is the slice of the answer
    # that rows[i] alone decides (inside windows[i]); empty for window x chunk plans.
    scored: tuple[Window, ...] = ()


@dataclass(frozen=True, slots=True)
class Layout:
    """How one check's rows are cut: the (shortened) question, the answer windows, and the
    prompt tokens that fit beside the widest window."""

    question: str
    windows: list[Window]
    prompt_budget: int


def row_layout(
    encoder: TextEncoder,
    context: Sequence[str],
    question: str,
    n_answer: int,
    *,
    max_length: int,
    answer_overlap_tokens: int,
) -> Layout:
    room = max_length - encoder.num_special
    question = fit_question(encoder, question, int(max_length * MAX_QUESTION_SHARE))
    overhead = encoder.count(prompt_head(question, len(context)) + prompt_tail())
    context_floor = int(max_length * MIN_CONTEXT_SHARE) if context else 0
    windows = answer_windows(n_answer, room - overhead - context_floor, answer_overlap_tokens)
    widest = max(w.end - w.start for w in windows)
    return Layout(question=question, windows=windows, prompt_budget=room - widest)


def plan_rows(
    encoder: TextEncoder,
    context: Sequence[str],
    question: str,
    answer: EncodedText,
    *,
    max_length: int,
    answer_overlap_tokens: int,
) -> Plan:
    """Rows covering every answer token, each at most ``max_length`` tokens long."""
    layout = row_layout(
        encoder, context, question, len(answer), max_length=max_length, answer_overlap_tokens=answer_overlap_tokens
    )
    return pair_rows(encoder, layout, chunk_prompts(encoder, context, layout.question, layout.prompt_budget), answer)


def pair_rows(encoder: TextEncoder, layout: Layout, prompts: Sequence[np.ndarray], answer: EncodedText) -> Plan:
    """Every answer window of ``layout`` beside every chunk prompt (window-major)."""
    windows = layout.windows
    if len(windows) * len(prompts) > MAX_ROWS:
        raise InvalidInput(
            f"input needs {len(windows) * len(prompts)} model windows ({len(windows)} answer windows x "
            f"{len(prompts)} context chunks), over the limit of {MAX_ROWS}; shorten the context or answer"
        )
    rows: list[ModelRow] = []
    owners: list[Window] = []
    for window in windows:
        answer_ids = answer.ids[window.start : window.end]
        for prompt_ids in prompts:
            rows.append(encoder.pair(prompt_ids, answer_ids))
            owners.append(window)
    return Plan(rows=tuple(rows), windows=tuple(owners), chunks=len(prompts))


def answer_windows(n_tokens: int, width: int, overlap: int) -> list[Window]:
    """Overlapping windows of at most ``width`` tokens that together cover ``n_tokens``."""
    if width < 8:
        raise InvalidInput(f"the model's window is too small for any answer (room for {width} tokens)")
    if n_tokens <= width:
        return [Window(0, n_tokens)]
    # Keep every step at least half a window so the row count stays linear in the answer.
    step = width - min(max(overlap, 0), width // 2)
    windows = []
    start = 0
    while True:
        end = min(start + width, n_tokens)
        windows.append(Window(start, end))
        if end == n_tokens:
            return windows
        start += step


def chunk_prompts(
    encoder: TextEncoder, context: Sequence[str], question: str, budget: int
) -> list[np.ndarray]:
    """Prompt token ids, one per context chunk, each at most ``budget`` tokens."""
    if not context:
        return [_check_fits(encoder.encode(build_prompt([], question)).ids, budget)]
    whole = whole_prompt(encoder, context, question, budget)
    if whole is not None:
        return [whole]
    overhead = encoder.count(prompt_head(question, len(context)) + prompt_tail())
    # Numbering and separator of one passage line, measured at the widest number.
    line_cost = encoder.count(passage_line(len(context) - 1, "")) + 1
    passage_room = budget - overhead - line_cost
    if passage_room < 16:
        raise InvalidInput(
            f"question and answer leave only {passage_room} tokens per chunk for passages; shorten them"
        )
    pieces: list[tuple[str, int]] = []
    for text, encoded in zip(context, encoder.encode_many(list(context)), strict=True):
        pieces.extend(_split_passage(text, encoded, passage_room))
    groups: list[list[str]] = [[]]
    used = 0
    for text, cost in pieces:
        cost += line_cost
        if groups[-1] and used + cost > budget - overhead:
            groups.append([])
            used = 0
        groups[-1].append(text)
        used += cost
    # One batch call: the tokenizer encodes the chunk prompts in parallel.
    chunk_encodings = encoder.encode_many([build_prompt(g, question) for g in groups])
    prompts: list[np.ndarray] = []
    for group, prompt in zip(groups, chunk_encodings, strict=True):
        prompts.extend([prompt.ids] if len(prompt) <= budget else _fit_group(encoder, group, question, budget))
    return prompts


def whole_prompt(encoder: TextEncoder, context: Sequence[str], question: str, budget: int) -> np.ndarray | None:
    """The prompt over every passage when it fits in ``budget`` tokens, else None."""
    if not _small(context, budget):
        return None
    ids = encoder.encode(build_prompt(context, question)).ids
    return ids if len(ids) <= budget else None


def _small(context: Sequence[str], budget: int) -> bool:
    # Every token covers at least one character, so this never skips a prompt that fits.
    return sum(len(p) for p in context) <= budget * 8


def _split_passage(text: str, encoded: EncodedText, room: int) -> list[tuple[str, int]]:
    n = len(encoded)
    if n <= room:
        return [(text, n)]
    overlap = min(PASSAGE_OVERLAP_TOKENS, room // 4)
    starts = encoded.offsets[:, 0]
    pieces = []
    start = 0
    while start < n:
        end = min(start + room, n)
        if end < n:
            end = _word_start(encoded, end, lo=start + room // 2)
        first = 0 if start == 0 else int(starts[start])
        last = len(text) if end == n else int(starts[end])
        pieces.append((text[first:last], end - start))
        if end == n:
            break
        start = end - overlap
    return pieces


def _word_start(encoded: EncodedText, cut: int, lo: int) -> int:
    """A cut at or before ``cut`` where a token starts a new word (whitespace before it)."""
    offsets = encoded.offsets
    for i in range(cut, max(lo, 1), -1):
        if offsets[i, 0] > offsets[i - 1, 1]:
            return i
    return cut


def _fit_group(encoder: TextEncoder, group: list[str], question: str, budget: int) -> list[np.ndarray]:
    """Encode a chunk; the estimate is conservative, but re-split if a tokenizer merged differently."""
    ids = encoder.encode(build_prompt(group, question)).ids
    if len(ids) <= budget:
        return [ids]
    if len(group) > 1:
        half = len(group) // 2
        return _fit_group(encoder, group[:half], question, budget) + _fit_group(
            encoder, group[half:], question, budget
        )
    text = group[0]
    encoded = encoder.encode(text)
    if len(encoded) < 2:
        raise InvalidInput("a single passage token does not fit beside the question and answer")
    cut = int(encoded.offsets[len(encoded) // 2, 0])
    if not 0 < cut < len(text):
        raise InvalidInput("a passage could not be cut to fit beside the question and answer")
    return _fit_group(encoder, [text[:cut]], question, budget) + _fit_group(
        encoder, [text[cut:]], question, budget
    )


def fit_question(encoder: TextEncoder, question: str, limit: int) -> str:
    encoded = encoder.encode(question)
    if len(encoded) <= limit:
        return question
    return question[int(encoded.offsets[len(encoded) - limit, 0]) :]


def _check_fits(ids: np.ndarray, budget: int) -> np.ndarray:
    if len(ids) > budget:
        raise InvalidInput(f"the prompt needs {len(ids)} tokens but only {budget} fit beside the answer")
    return ids
