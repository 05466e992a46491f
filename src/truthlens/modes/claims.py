"""Claim segmentation: split an answer into sentence/clause segments that keep char offsets.

Premium mode votes on these segments and swaps inconsistent ones in place, so every segment
satisfies ``text[seg.start:seg.end] == seg.text`` and rebuilding keeps everything between
segments (list markers, line breaks, spacing) untouched. Rules, in order: line breaks end a
segment; a list marker (``-``, ``*``, ``•``, ``1.``, ``a)``) starts one and stays outside
it; ``.!?`` end a sentence only when followed by space and not part of an abbreviation, an
initial (``J. K.``), a number (``3.14``) or an ellipsis inside a sentence; ``;`` and a
contrastive conjunction after a comma (``, but``) end a clause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt ft no nos vs etc e.g i.e cf al fig figs approx ca est dept univ "
    "inc ltd co corp gov u.s u.k u.n a.m p.m jan feb mar apr jun jul aug sep sept oct nov dec "
    "vol eq eqs sec ch pp op".split()
)
_LIST_MARKER = re.compile(r"[ \t]*(?:[-*•+]|\d{1,3}[.)]|[a-zA-Z][.)])[ \t]+")
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)")
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
    cuts = [m.end() for m in _SENTENCE_END.finditer(text, start, end)
            if _is_sentence_end(text, m.start(), m.end(), end)]
    if clauses:
        cuts += [m.end() for m in _CLAUSE_END.finditer(text, start, end)]
    begin = start
    for cut in sorted(set(cuts)) + [end]:
        _add(text, begin, cut, out)
        begin = cut


def _is_sentence_end(text: str, punct_start: int, punct_end: int, line_end: int) -> bool:
    if text[punct_start] != ".":
        return True
    if text[punct_start:punct_end].startswith(".."):  # an ellipsis ends a sentence only before a capital
        nxt = text[punct_end:line_end].lstrip()
        return bool(nxt) and nxt[0].isupper()
    word_match = re.search(r"[\w.]+$", text[:punct_start])
    word = word_match.group(0).lower() if word_match else ""
    if word in ABBREVIATIONS or word.rstrip(".") in ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isalpha():  # an initial: "J. K. Rowling"
        return False
    nxt = text[punct_end:line_end].lstrip()
    # "in 3. quarter" / "approx. 5" style continuations: a lower-case word after the period
    # means the sentence goes on.
    return not (nxt and nxt[0].islower())


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
