"""Plan ``grounded`` rows: each answer claim is judged beside the context most relevant to it.

Why: a claim is supported when *some* passage supports it. Window x chunk rows (``plan_rows``)
judge every claim beside every chunk, and a chunk that never mentions a claim calls it
unsupported — with ``max`` across chunks every faithful answer over a long context is flagged,
with ``min``/``best`` a contradiction in one chunk is outvoted by the others. A reader instead
looks the claim up where the context talks about it, and so do these rows:

1. When the whole context fits beside the answer, nothing changes: ``plan_rows``' rows (one
   per answer window).
2. Otherwise the context is cut into *pieces* (a passage, or a group of its sentences of at
   most ``PIECE_TOKENS``) and the answer into *claims* (its sentences; consecutive ones merged
   so there are at most ``MAX_CLAIM_ROWS``). Pieces and claims are scored for relevance
   (:mod:`truthlens.detector.relevance`: embedder cosine + word overlap; one embedding pass over
   the context, cached).
3. Each claim picks the most relevant pieces that would fit beside its answer window (the whole
   answer when it fits, so the model sees the claim in place), within ``RELEVANCE_MARGIN`` of its
   best. The claims then share as few rows as hold their evidence (:func:`covering_rows`): one
   row takes every claim's best piece, then every claim's second, and so on while they fit, in
   their original order; a claim whose pieces (its first ``COVER_PICKS``; default all) made it in
   reads its tokens from that row (``Plan.scored``). Only the claims whose evidence did not fit
   get another row, holding their pieces alone, no longer than those need (rows are not padded
   on CPU).

A passage that no claim picked is in no row and cannot outvote the one that supports a claim,
while a contradiction in the relevant passage is right beside the claim. Cost: one embedding
pass (linear in the context) and, on RAGTruth QA, 1.5 rows per check where rows per claim took
2.1 (docs/benchmarks.md), at most ``MAX_CLAIM_ROWS`` for a long answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from truthlens.detector.chunking import Plan, Window, chunk_prompts, pair_rows, row_layout, whole_prompt
from truthlens.detector.encoding import EncodedText, ModelRow, TextEncoder
from truthlens.detector.prompt import build_prompt, passage_line, prompt_head, prompt_tail
from truthlens.detector.relevance import Relevance
from truthlens.detector.text import sentence_starts

# Largest context piece, in detector tokens. Small enough that a row holds several pieces from
# different places and that one off-topic sentence group is not carried in by a relevant one;
# large enough for a sentence and its neighbours (the embedder sees up to 256 tokens).
PIECE_TOKENS = 96
# Rows per check, whatever the context length; a longer answer merges consecutive sentences.
MAX_CLAIM_ROWS = 32
# A sentence shorter than this ("Yes.", a list marker) is judged together with the next one.
MIN_CLAIM_TOKENS = 4
# A row takes only pieces whose relevance is within this of the claim's best piece (still
# bounded by the row's room). Filling the row with the rest does not help: a piece that far
# below the best does not state the claim, and it dilutes the one that does.
RELEVANCE_MARGIN = 0.3
# A claim reads its tokens from a row when it holds this many of the claim's picks, most relevant
# first (None: all of them); otherwise the claim waits for an extra row. Fewer mean fewer rows and
# more changed verdicts: a claim read beside other claims' pieces without some of its own
# (measured in docs/benchmarks.md#rows-that-add-evidence-not-cost).
COVER_PICKS: int | None = None


@dataclass(frozen=True, slots=True)
class Piece:
    passage: int  # index of the passage it comes from
    start: int  # characters of that passage
    end: int
    tokens: int


def plan_grounded(
    encoder: TextEncoder,
    context: Sequence[str],
    question: str,
    answer_text: str,
    answer: EncodedText,
    relevance: Relevance,
    *,
    max_length: int,
    answer_overlap_tokens: int,
) -> Plan:
    """Rows covering every answer token, each claim beside its most relevant context."""
    layout = row_layout(
        encoder, context, question, len(answer), max_length=max_length, answer_overlap_tokens=answer_overlap_tokens
    )
    # No context, or all of it fits: plan_rows' rows, from the layout and prompt made here.
    if not context:
        return pair_rows(encoder, layout, chunk_prompts(encoder, [], layout.question, layout.prompt_budget), answer)
    whole = whole_prompt(encoder, context, layout.question, layout.prompt_budget)
    if whole is not None:
        return pair_rows(encoder, layout, [whole], answer)
    width = max(w.end - w.start for w in layout.windows)
    claims = claim_ranges(answer_text, answer, width)
    pieces = context_pieces(encoder, context)
    texts = [context[p.passage][p.start : p.end] for p in pieces]
    claim_texts = [answer_text[_char(answer, c.start) : _char_end(answer, c.end)] for c in claims]
    scores = relevance.scores(claim_texts, texts)

    room = max_length - encoder.num_special
    # Measured with the widest passage count and number, so the estimate never falls short.
    overhead = encoder.count(prompt_head(layout.question, len(pieces)) + prompt_tail())
    line_cost = encoder.count(passage_line(len(pieces) - 1, "")) + 1
    claim_windows = [_window_around(claim, len(answer), width) for claim in claims]
    picks = [
        _select(pieces, claim_scores, room - (w.end - w.start) - overhead, line_cost, RELEVANCE_MARGIN)
        for w, claim_scores in zip(claim_windows, scores, strict=True)
    ]
    rows: list[ModelRow | None] = [None] * len(claims)
    costs = [p.tokens + line_cost for p in pieces]
    for window, members, chosen in covering_rows(claim_windows, picks, costs, room - overhead, COVER_PICKS):
        budget = room - (window.end - window.start)
        prompt = _prompt(encoder, context, pieces, chosen, layout.question, budget)
        row = encoder.pair(prompt, answer.ids[window.start : window.end])
        for member in members:
            rows[member] = row
    planned = tuple(r for r in rows if r is not None)
    assert len(planned) == len(claims)  # covering_rows places every claim
    return Plan(rows=planned, windows=tuple(claim_windows), chunks=1, scored=tuple(claims))


def covering_rows(
    windows: Sequence[Window], picks: Sequence[list[int]], costs: Sequence[int], room: int, cover: int | None
) -> list[tuple[Window, list[int], list[int]]]:
    """The rows of a check's claims: ``(answer window, its claims, its pieces)``, as few as hold
    each claim's evidence. Claims of one answer window (all of them for an answer that fits one)
    share a row filled in turns: every claim's best piece (``picks``: each claim's pieces in
    relevance order), then every claim's second, and so on while they fit (``costs``: a piece's
    tokens with its line; ``room``: the row's tokens beside the prompt's frame). A claim whose
    first ``cover`` picks (None: all) made it in reads its tokens from that row; the others get
    the next row, filled the same way with their pieces alone, so an extra row carries only the
    evidence its claims lack, and is no longer than that evidence. When the turns leave out the
    first claim waiting, its row holds its own picks instead, so every row places a claim."""
    groups: list[tuple[Window, list[int], list[int]]] = []
    by_window: dict[Window, list[int]] = {}
    for index, window in enumerate(windows):
        by_window.setdefault(window, []).append(index)
    for window, claims in by_window.items():
        budget = room - (window.end - window.start)
        waiting = claims
        while waiting:
            chosen = _in_turns([picks[c] for c in waiting], costs, budget)
            if not set(picks[waiting[0]][:cover]) <= set(chosen):
                # (cover over 1) The first claim's pieces fit a row of their own (_select): it
                # opens one, and the claims whose pieces that row holds read from it too.
                chosen = list(picks[waiting[0]])
            members = [c for c in waiting if set(picks[c][:cover]) <= set(chosen)]
            groups.append((window, members, chosen))
            waiting = [c for c in waiting if c not in members]
    return groups


def _in_turns(picks: Sequence[list[int]], costs: Sequence[int], budget: int) -> list[int]:
    """Pieces taken in turns, each claim's next most relevant one per round, while they fit, in
    the order taken (the first claim's best piece first: it always fits)."""
    chosen: list[int] = []
    used = 0
    for rank in range(max((len(p) for p in picks), default=0)):
        for claim_picks in picks:
            if rank < len(claim_picks) and claim_picks[rank] not in chosen:
                piece = claim_picks[rank]
                if used + costs[piece] <= budget:
                    chosen.append(piece)
                    used += costs[piece]
    return chosen


def claim_ranges(answer_text: str, answer: EncodedText, width: int) -> list[Window]:
    """The answer's tokens cut into claims: sentences, short ones merged with the next,
    consecutive ones merged down to about ``MAX_CLAIM_ROWS``, none wider than ``width``."""
    n = len(answer)
    cuts = np.searchsorted(answer.offsets[:, 0], sentence_starts(answer_text), side="left")
    edges = sorted({0, *(int(c) for c in cuts if 0 < c < n), n})
    target = max(MIN_CLAIM_TOKENS, math.ceil(n / MAX_CLAIM_ROWS))
    claims: list[Window] = []
    start = 0
    for end in edges[1:]:
        if end - start >= target or end == n:
            claims.append(Window(start, end))
            start = end
    # A claim wider than a window (a run-on sentence, or merging) is cut into window-wide parts.
    out: list[Window] = []
    for claim in claims:
        for first in range(claim.start, claim.end, width):
            out.append(Window(first, min(first + width, claim.end)))
    return out


def context_pieces(encoder: TextEncoder, context: Sequence[str]) -> list[Piece]:
    """Passages, long ones cut into groups of whole sentences of at most ``PIECE_TOKENS``."""
    pieces: list[Piece] = []
    for index, (text, encoded) in enumerate(zip(context, encoder.encode_many(list(context)), strict=True)):
        n = len(encoded)
        if n == 0:
            continue
        if n <= PIECE_TOKENS:
            pieces.append(Piece(index, 0, len(text), n))
            continue
        token_starts = encoded.offsets[:, 0]
        cuts = np.searchsorted(token_starts, sentence_starts(text), side="left")
        edges = sorted({0, *(int(c) for c in cuts if 0 < c < n), n})
        group_start = 0
        for i, end in enumerate(edges[1:], start=1):
            following = edges[i + 1] if i + 1 < len(edges) else None
            # Close the group when the next sentence would overflow it (or the text ends).
            if following is None or following - group_start > PIECE_TOKENS:
                for first in range(group_start, end, PIECE_TOKENS):  # a sentence over the limit
                    last = min(first + PIECE_TOKENS, end)
                    pieces.append(Piece(index, _cut(encoded, first, text), _cut(encoded, last, text), last - first))
                group_start = end
    return pieces


def _cut(encoded: EncodedText, token: int, text: str) -> int:
    return len(text) if token >= len(encoded) else (0 if token == 0 else int(encoded.offsets[token, 0]))


def _char(answer: EncodedText, token: int) -> int:
    return int(answer.offsets[token, 0])


def _char_end(answer: EncodedText, token_end: int) -> int:
    return int(answer.offsets[token_end - 1, 1])


def _window_around(claim: Window, n: int, width: int) -> Window:
    """The answer window of ``width`` tokens (all of a short answer) centred on ``claim``."""
    if n <= width:
        return Window(0, n)
    start = claim.start - (width - (claim.end - claim.start)) // 2
    start = min(max(start, 0), n - width)
    return Window(start, start + width)


def _select(pieces: Sequence[Piece], scores: np.ndarray, budget: int, line_cost: int, margin: float) -> list[int]:
    """The most relevant pieces (within ``margin`` of the best) that fit ``budget``, each charged
    its own passage line, in relevance order. A piece that does not fit is skipped so a smaller,
    less relevant one can."""
    chosen: list[int] = []
    used = 0
    floor = float(scores.max()) - margin if len(scores) else 0.0
    for index in np.argsort(-scores, kind="stable"):
        if scores[index] < floor:
            break
        cost = pieces[index].tokens + line_cost
        if used + cost <= budget:
            chosen.append(int(index))
            used += cost
    return chosen


def _prompt(
    encoder: TextEncoder,
    context: Sequence[str],
    pieces: Sequence[Piece],
    chosen: list[int],
    question: str,
    budget: int,
) -> np.ndarray:
    """The prompt over the chosen pieces in their original order (adjacent pieces of one
    passage joined back into one passage line). Drops the least relevant piece in the rare case
    the joined text tokenises longer than estimated."""
    while True:
        lines: list[str] = []
        previous: Piece | None = None
        for index in sorted(chosen):
            piece = pieces[index]
            text = context[piece.passage][piece.start : piece.end].strip()
            if previous is not None and previous.passage == piece.passage and previous.end == piece.start:
                lines[-1] = f"{lines[-1]} {text}"
            else:
                lines.append(text)
            previous = piece
        ids = encoder.encode(build_prompt(lines, question)).ids
        if len(ids) <= budget or not chosen:
            return ids
        chosen = chosen[:-1]
