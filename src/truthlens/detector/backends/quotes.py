"""Quotes of an answer → character ranges of that answer.

A generative detector names the unsupported parts of an answer by quoting them; the gateway
needs offsets. Each quote is looked up exactly first; when the answer has no such text, the
same text up to whitespace runs and letter case (a model that re-spaced or re-cased what it
copied). A quote the model gives more than once takes the answer's occurrences in order: the
first unused one each time, so "1925 ... 1925" quoted twice flags both places; once the answer
has no unused occurrence left, the surplus repeat adds nothing and is dropped. A quote found
nowhere in the answer was invented (or paraphrased): it is dropped and counted, never turned
into a span. Overlapping ranges are merged.

The work is bounded whatever the reply: a reply's quotes are many only when the model ignored
its ``max_tokens`` (each quote costs a few tokens), so more than :data:`MAX_QUOTES` is no
reading of the answer, and locating stops at the first invented quote past ``max_invented``
(the caller's bound: past it the reply is unreadable, so the rest need not be looked up).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# The most quotes a reply may give: 256 quotes of a few tokens each is already more than a
# detector's max_tokens (1024 by default) lets an honest reply hold.
MAX_QUOTES = 256


@dataclass(frozen=True, slots=True)
class Located:
    """Where the quotes are: merged ``(start, end)`` ranges, by position, and what was dropped."""

    ranges: tuple[tuple[int, int], ...]
    invented: int  # quotes (empty ones included) found nowhere in the answer
    repeats: int  # surplus repeats: the answer holds that text fewer times than it was quoted
    stopped: bool = False  # locating stopped at an invented quote past max_invented


class _Folded:
    """``text`` with whitespace runs folded to one space and letters lower-cased, and where
    each folded character came from (lower-casing that changes a character's length, as
    ``"İ".lower()`` does, leaves that character as it is so positions stay one to one)."""

    def __init__(self, text: str) -> None:
        chars: list[str] = []
        origin: list[int] = []
        for i, ch in enumerate(text):
            if ch.isspace():
                if i and text[i - 1].isspace():
                    continue  # the run already has its one space
                chars.append(" ")
            else:
                low = ch.lower()
                chars.append(low if len(low) == 1 else ch)
            origin.append(i)
        self.text = "".join(chars)
        self.origin = origin


def fold(text: str) -> str:
    """The comparison form of ``text`` (whitespace runs as one space, lower case)."""
    return _Folded(text).text


def locate_quotes(answer: str, quotes: Sequence[str], *, max_invented: int | None = None) -> Located:
    """The answer ranges ``quotes`` name, in the model's order of repeats (see the module doc);
    with ``max_invented``, the ranges found until the invented quote past that many (``stopped``)."""
    folded: _Folded | None = None  # built on the first quote that needs it
    next_exact: dict[str, int] = {}
    next_folded: dict[str, int] = {}
    found: list[tuple[int, int]] = []
    invented = repeats = 0
    for raw in quotes:
        if max_invented is not None and invented > max_invented:
            return Located(ranges=_merged(found), invented=invented, repeats=repeats, stopped=True)
        quote = raw.strip()
        if not quote:
            invented += 1
            continue
        at = answer.find(quote, next_exact.get(quote, 0))
        if at >= 0:
            next_exact[quote] = at + 1
            found.append((at, at + len(quote)))
            continue
        if quote in next_exact:  # found exactly before: the answer has no unused occurrence left
            repeats += 1
            continue
        if folded is None:
            folded = _Folded(answer)
        key = fold(quote)
        at = folded.text.find(key, next_folded.get(key, 0))
        if at < 0:
            if key in next_folded:
                repeats += 1
            else:
                invented += 1
            continue
        next_folded[key] = at + 1
        found.append((folded.origin[at], folded.origin[at + len(key) - 1] + 1))
    stopped = max_invented is not None and invented > max_invented
    return Located(ranges=_merged(found), invented=invented, repeats=repeats, stopped=stopped)


def _merged(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return tuple(out)
