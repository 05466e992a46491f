"""Cuts a growing answer into sentences, as it streams, for progressive release: each sentence
is checked and released once it is complete, so a cut must never come too early.

Whether a stop ends a sentence is the detector's own rule
(:func:`truthlens.detector.text.sentence_end`: one idea of a sentence for the check and the
stream), in its cautious form: ``.``, ``!``, ``?`` or ``…`` (then closing quotes or brackets)
followed by white space and no lower-case letter, where a full stop does not end an abbreviation (``e.g.``, ``Dr.``,
``U.S.``, ``No. 5``), an initial (``J. Smith``) or a list item's number (``1.`` opening a line,
``2.`` of an inline ``1. … 2. …``); decimals and versions (``3.14``) have no space after the
stop. A CJK full stop ends one where it stands. Here, as the text streams: a blank line, and a
line break before a list item, end one too; inline code and anything inside a fenced code block
(the block is one piece, however many lines) never cut. A sentence
that runs past ``max_chars`` is cut at its last space before the bound (a bound on how long
the client can wait, and on how much one check reads).

:class:`SentenceSplitter` is fed the whole answer so far each time and scans only what it has
not confirmed yet; a cut is reported once the characters after it prove it (the next
non-space character), so a stream cut inside ``e.g.`` or ``3.`` never splits there.
"""

from __future__ import annotations

import re

from truthlens.detector.text import CJK_TERMINATORS, TERMINATORS, UNDECIDED, sentence_end

DEFAULT_MAX_SENTENCE_CHARS = 600

_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)]|[a-zA-Z][.)])[ \t]+")
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)


class SentenceSplitter:
    """The sentence ends of one growing text (offsets just after each sentence's last character)."""

    def __init__(self, max_chars: int = DEFAULT_MAX_SENTENCE_CHARS) -> None:
        if max_chars < 2:
            raise ValueError("max_chars must be at least 2")
        self.max_chars = max_chars
        self._start = 0  # where the sentence being read began
        self._in_fence: str | None = None  # the fence marker of an open code block at ``_start``
        self._in_code = False  # an inline code span is open at ``_start`` (a bounded cut inside one)

    @property
    def start(self) -> int:
        """Where the sentence not yet complete begins."""
        return self._start

    def feed(self, text: str, *, final: bool = False, base: int = 0) -> list[int]:
        """The ends of the sentences ``text`` (the answer so far, grown since the last call)
        completes; ``final``: the text is whole, its rest is the last sentence. ``base``: ``text``
        is the answer from that character on (at most :attr:`start`), so a caller need not keep
        the whole answer in one string."""
        if not 0 <= base <= self._start:
            raise ValueError(f"base {base} is past the sentence being read ({self._start})")
        self._start -= base
        ends = [end + base for end in self._feed(text, final)]
        self._start += base
        return ends

    def _feed(self, text: str, final: bool) -> list[int]:
        ends: list[int] = []
        while True:
            end = self._next_end(text)
            if end is None:
                break
            ends.append(end)
        if final and text[self._start:].strip():
            ends.append(len(text))
            self._start = len(text)
        return ends

    def _next_end(self, text: str) -> int | None:
        """The end of the sentence from ``_start`` when ``text`` proves it; moves ``_start`` past it."""
        i = self._start
        n = len(text)
        fence = self._in_fence
        in_code = self._in_code
        line_start = i == 0 or text[i - 1] == "\n"
        while i < n:
            if i - self._start >= self.max_chars:
                return self._bounded_cut(text, fence, in_code)
            if line_start:
                match = _FENCE.match(text, i)
                if match is not None and (fence is None or match.group(1) == fence):
                    line_end = text.find("\n", i)
                    if line_end < 0:
                        if n - self._start <= self.max_chars:
                            return None  # the fence line is still being written
                        # A fence line longer than the bound: the block is open from here
                        # (as a renderer reads it once the line ends), the piece cut at the bound.
                        return self._bounded_cut(text, match.group(1) if fence is None else None, False)
                    if fence is None:
                        fence = match.group(1)
                    else:  # the block closes: it ends the piece
                        fence = None
                        return self._cut(line_end + 1, None, False)
                    i = line_end + 1
                    continue
            line_start = False
            ch = text[i]
            if fence is not None:
                line_start = ch == "\n"
                i += 1
                continue
            if ch == "`":
                in_code = not in_code
            elif in_code:
                pass
            elif ch == "\n":
                j = i + 1
                if j >= n:
                    return None
                if text[j] == "\n" or _LIST_ITEM.match(text, j) or _FENCE.match(text, j):
                    if text[self._start:i].strip():
                        return self._cut(i, None, False)
                line_start = True
            elif ch in CJK_TERMINATORS:
                return self._cut(i + 1, None, False)
            elif ch in TERMINATORS:
                end = sentence_end(text, i, self._start, final=False, cautious=True)
                if end == UNDECIDED:
                    return None  # the characters that decide have not arrived
                if end is not None:
                    return self._cut(end, None, False)
            i += 1
        return None

    def _cut(self, end: int, fence: str | None, in_code: bool) -> int:
        self._start = end
        self._in_fence = fence
        self._in_code = in_code
        return end

    def _bounded_cut(self, text: str, fence: str | None, in_code: bool) -> int:
        """A sentence over the bound: cut after its last space (or at the bound), keeping the
        code block or inline code open across the cut."""
        limit = self._start + self.max_chars
        space = text.rfind(" ", self._start + 1, limit)
        end = space + 1 if space > self._start else limit
        # The fence/code state at ``end``: rescan the piece up to it.
        piece = text[self._start:end]
        if fence is None and not self._in_fence:
            in_code = self._in_code ^ (piece.count("`") % 2 == 1)
        return self._cut(end, fence, in_code)


def split(text: str, max_chars: int = DEFAULT_MAX_SENTENCE_CHARS) -> list[str]:
    """``text`` (whole) cut into its sentences; joined they give ``text`` back."""
    splitter = SentenceSplitter(max_chars)
    ends = splitter.feed(text, final=True)
    out, start = [], 0
    for end in ends:
        out.append(text[start:end])
        start = end
    if start < len(text):
        out[-1:] = [(out[-1] if out else "") + text[start:]]
    return out
