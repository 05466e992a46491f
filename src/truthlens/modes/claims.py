"""Claim segmentation: split an answer into sentence/clause segments that keep char offsets.

Premium mode votes on these segments and swaps inconsistent ones in place, so every segment
satisfies ``text[seg.start:seg.end] == seg.text`` and rebuilding keeps everything between
segments (list markers, line breaks, spacing) untouched. Rules, in order: line breaks end a
segment; a list marker (``-``, ``*``, ``•``, ``1.``, ``a)``) starts one and stays outside
it; a sentence ends where the detector's sentences end (:func:`truthlens.detector.text.sentence_end`:
not after an abbreviation, an initial, inside a number or before a lower-case word); ``;`` and a
contrastive conjunction after a comma (``, but``) end a clause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from truthlens.detector.text import sentence_end

_LIST_MARKER = re.compile(r"[ \t]*(?:[-*•+]|\d{1,3}[.)]|[a-zA-Z][.)])[ \t]+")
_STOP = re.compile(r"[.!?…]+")
_CLAUSE_END = re.compile(r";(?=\s)|,(?=\s+(?:but|whereas|while|although|though|however|yet)\b)", re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Segment:
    """One claim: ``answer[start:end] == text`` (no surrounding whitespace)."""

    start: int
    end: int
    text: str


def segment(text: str, *, clauses: bool = True) -> tuple[Segment, ...]:
    """The claim segments of ``text``, in order, non-overlapping."""
    out: list[Segment] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        body_start = pos
        marker = _LIST_MARKER.match(line)
        # "1. The tower..." is a list marker; "3.5 metres" is not (needs the space after "1.").
        if marker:
            body_start = pos + marker.end()
        _split_line(text, body_start, pos + len(line), clauses, out)
        pos += len(line)
    return tuple(out)


def _split_line(text: str, start: int, end: int, clauses: bool, out: list[Segment]) -> None:
    cuts: list[int] = []
    for m in _STOP.finditer(text, start, end):
        if cuts and m.start() < cuts[-1]:
            continue  # closing quotes or brackets already read into the last sentence
        cut = sentence_end(text, m.start(), cuts[-1] if cuts else start, limit=end)
        if cut is not None and cut < end:
            cuts.append(cut)
    if clauses:
        cuts += [m.end() for m in _CLAUSE_END.finditer(text, start, end)]
    begin = start
    for cut in sorted(set(cuts)) + [end]:
        _add(text, begin, cut, out)
        begin = cut


def _add(text: str, begin: int, end: int, out: list[Segment]) -> None:
    piece = text[begin:end]
    stripped = piece.strip()
    if not stripped or not _WORD.search(stripped):
        return
    lead = len(piece) - len(piece.lstrip())
    s = begin + lead
    out.append(Segment(start=s, end=s + len(stripped), text=stripped))


def words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of lower-cased word tokens (0 when either is empty)."""
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def align(target: Segment, candidates: Iterable[Segment]) -> tuple[Segment | None, float]:
    """The candidate with the highest token overlap with ``target`` (first one on ties)."""
    best: Segment | None = None
    best_score = 0.0
    for cand in candidates:
        score = overlap(target.text, cand.text)
        if score > best_score:
            best, best_score = cand, score
    return best, best_score


def rebuild(text: str, replacements: Mapping[Segment, str | None]) -> str:
    """``text`` with each given segment replaced (``None``: removed with its trailing space)."""
    out = text
    for seg in sorted(replacements, key=lambda s: s.start, reverse=True):
        new = replacements[seg]
        if new is None:
            end = seg.end
            while end < len(out) and out[end] in " \t":
                end += 1
            out = out[: seg.start] + out[end:]
        else:
            out = out[: seg.start] + new + out[seg.end:]
    return out.strip()
