"""Templates read through small edits of their opening: a word added or dropped, a rule reworded.

Users copy a framework's prompt and change it: "If you don't know the answer, **just** say that
you don't know", "a helpful assistant" for "an assistant", one more rule. Read exactly
(:mod:`~truthlens.gateway.apis.context.templates`), such a copy is no template, and its answer
goes out ``skipped``. Here, after the exact templates and before the plain layouts
(:func:`with_edits`), each template whose opening literal (the instruction text before its
first slot) is long enough to be told apart from ordinary prose is tried again with that
opening compared word by word, not character by character: the message's first words are
aligned with the opening's (case and punctuation aside), and the message is that template when
the two agree closely
(:data:`MATCH_RATIO`, :func:`difflib.SequenceMatcher`'s ratio: 2 × words in common / words in
both). Everything after the opening is read exactly as the template says (its labels such as
``Question:``, its slots), so a message that only shares a phrase with a template, or begins
like one and then says something else, is not read.

Only openings are tolerated: middle literals are usually short labels whose edits change what
the slots mean (``Question:`` to ``Query:``), and a template that starts with a slot has no
opening to compare. A request that begins much like a template (:data:`NEAR_RATIO`) but is not
read is told which template it came closest to (:func:`nearest`), so an operator sees why it
went unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from itertools import islice

from truthlens.gateway.apis.context import passages as split_passages
from truthlens.gateway.apis.context.reading import LAYOUTS, SYSTEM_ROLES, Reader, Reading, TemplateReader
from truthlens.gateway.apis.context.templates import Role, Template, TemplateError

# An opening shorter than this is a label or a short phrase: an edit of it is another text.
MIN_WORDS = 6
# Agreement of a message's opening with a template's for it to be read as that template: one
# word added, dropped or changed in ten (measured in docs/context.md: edited copies read,
# ordinary chat not).
MATCH_RATIO = 0.8
# Agreement above which a request left unread is told the template it came closest to.
NEAR_RATIO = 0.65
# Words that name what a context slot holds (the vocabulary the plain layouts read their
# introductions by, :mod:`~truthlens.gateway.apis.context.plain`): an edited opening keeps each
# of its own, or it asks for something else than the template's context.
CONTEXT_NOUNS = frozenset({"context", "information", "document", "documents", "passage", "passages", "source",
                           "sources", "excerpt", "excerpts", "text", "article"})
_WORD = re.compile(r"\S+")
# The longest opening compared, with its slack, fits in this many words and characters.
_MAX_WORDS = 96
_PREFIX = 1024
_GLUED = re.compile(r"\S+\Z")
_LABEL_LINE = re.compile(r"(?<=\n)[ \t]*\S+(?:[ \t]+\S+){0,2}:[ \t]*\n?[ \t]*\Z")
_LINE_END = re.compile(r"[ \t]*(?:\r?\n)")
_EDGE = re.compile(r"^[^\w']+|[^\w']+$")
_SLOT = re.compile(r"\{\{|\}\}|\{([a-z]+)\}")


@dataclass(frozen=True, slots=True)
class Near:
    """The template a message came closest to, and how close (:data:`NEAR_RATIO` ..)."""

    name: str
    ratio: float


@dataclass(frozen=True, slots=True)
class TolerantReader:
    """A template whose opening may be edited; the rest is read exactly (``rest``; None: the
    rest is the context slot alone)."""

    template: Template
    opening: tuple[str, ...]  # the opening literal's words, normalised
    rest: Template | None
    line_end: bool  # the opening ends its line: so must the message's
    vocabulary: frozenset[str] = frozenset()  # the opening's distinct words

    @property
    def name(self) -> str:
        return self.template.name

    def read(self, text: str, role: Role) -> Reading | None:
        """The reading of ``text`` (a :class:`~truthlens.gateway.apis.context.reading.Reader`)."""
        if role != self.template.role:
            return None
        ratio, end = self.agreement(text)
        if ratio < MATCH_RATIO:
            return None
        kept = {_normal(w) for w in text[:end].split()}
        if any(w in CONTEXT_NOUNS and w not in kept for w in self.opening):
            return None  # "the following tone" is not "the following context"
        return self._rest(text[end:], role)

    def agreement(self, text: str, *, anywhere: bool = False) -> tuple[float, int]:
        """How closely ``text`` begins like the opening, and where its opening ends (a character
        offset): the best ratio over the message's first words, as many as the opening's give
        or take a few. Words after the opening only lower the ratio, so the best cut ends it.
        An opening that ends its line is cut at a line end, unless ``anywhere``."""
        slack = max(3, len(self.opening) // 4)
        spans, words, vocabulary = _first_words(text[:_PREFIX])
        if 2 * len(vocabulary & self.vocabulary) < len(self.vocabulary):
            return 0.0, 0  # most messages leave here, without an alignment (under half the words)
        spans, words = spans[:len(self.opening) + slack], words[:len(self.opening) + slack]
        # One alignment of the whole window; the words of the opening each shorter cut keeps
        # are the aligned pairs before it (a prefix's own alignment would rarely find more).
        blocks = SequenceMatcher(None, words, self.opening, autojunk=False).get_matching_blocks()
        kept = [0] * (len(words) + 1)  # kept[k]: opening words aligned within the first k
        for a, _, size in blocks:
            for i in range(a, a + size):
                kept[i + 1] = 1
        for k in range(1, len(words) + 1):
            kept[k] += kept[k - 1]
        best, end = 0.0, 0
        for k in range(max(1, min(len(words), len(self.opening) - slack)), len(words) + 1):
            if self.line_end and not anywhere and not _LINE_END.match(text, spans[k - 1][1]):
                continue
            ratio = 2 * kept[k] / (k + len(self.opening))
            if ratio > best:
                best, end = ratio, spans[k - 1][1]
        return best, end

    def _rest(self, text: str, role: Role) -> Reading | None:
        t = self.template
        if self.rest is not None:
            reading = TemplateReader(self.rest).read(text, role)
            return Reading(t.name, reading.passages, reading.question) if reading is not None else None
        found = tuple(split_passages.split(text, t.separator))
        return Reading(t.name, found, t.instruction) if found else None


def tolerant(reader: Reader) -> TolerantReader | None:
    """``reader`` read through edits of its opening; None for a layout, a template without an
    opening of :data:`MIN_WORDS` words, or one whose rest cannot stand alone."""
    if not isinstance(reader, TemplateReader):
        return None
    t = reader.template
    first = next((m for m in _SLOT.finditer(t.text) if m.group(1) is not None), None)
    if first is None:
        return None
    # What introduces the slot stays with the rest, read exactly: a word glued to it (a quote
    # before the context, glued to the context's first word in a message) or a label on a line
    # of its own ("Question:", "Documents:"), whose edit would change what the slot holds.
    glued = _GLUED.search(t.text, 0, first.start()) or _LABEL_LINE.search(t.text, 0, first.start())
    cut = glued.start() if glued is not None else first.start()
    literal = t.text[:cut].replace("{{", "{").replace("}}", "}")
    opening = tuple(_normal(w) for w in literal.split())
    if len(opening) < MIN_WORDS:
        return None
    line_end = "\n" in literal[len(literal.rstrip()):]
    rest_text = t.text[cut:]
    if rest_text == "{context}":
        return TolerantReader(t, opening, None, line_end, frozenset(opening))
    try:
        rest = Template(name=t.name, text=rest_text, role=t.role, separator=t.separator, instruction=t.instruction,
                        task=t.task, source=t.source)
    except TemplateError:
        return None
    return TolerantReader(t, opening, rest, line_end, frozenset(opening))


def tolerant_readers(readers: tuple[Reader, ...]) -> tuple[TolerantReader, ...]:
    """The tolerant forms of a route's readers, in its order (built once per route)."""
    return _forms(readers)[0]


def with_edits(readers: tuple[Reader, ...]) -> tuple[Reader, ...]:
    """A route's readers with the tolerant forms of its templates after them and before the
    built-in plain layouts: an edited copy of a template is read as that template (its question,
    its earlier answer) before a layout reads a part of it."""
    return _forms(readers)[1]


# A route's readers tuple (by identity: it lives as long as the route) → its two forms. Hashing
# the readers on every request would cost more than reading most messages.
_FORMS: dict[int, tuple[tuple[Reader, ...], tuple[TolerantReader, ...], tuple[Reader, ...]]] = {}
_MAX_FORMS = 256


def _forms(readers: tuple[Reader, ...]) -> tuple[tuple[TolerantReader, ...], tuple[Reader, ...]]:
    found = _FORMS.get(id(readers))
    if found is None or found[0] is not readers:
        edited = tuple(r for r in map(tolerant, readers) if r is not None)
        at = next((i for i, r in enumerate(readers) if r in LAYOUTS), len(readers))
        if len(_FORMS) >= _MAX_FORMS:
            _FORMS.clear()  # config reloads: the old routes' tuples are gone
        found = _FORMS[id(readers)] = (readers, edited, (*readers[:at], *edited, *readers[at:]))
    return found[1], found[2]


def nearest(messages: Sequence[tuple[str, str]], readers: Sequence[TolerantReader]) -> Near | None:
    """The template the messages a reader looks at (the user's last, each system or developer
    message) come closest to, when one comes at least :data:`NEAR_RATIO` close."""
    user = next((text for role, text in reversed(messages) if role == "user"), None)
    looked_at = [(text, "user") for text in (user,) if text] + [
        (text, "system") for role, text in messages if role in SYSTEM_ROLES and text.strip()]
    best: Near | None = None
    for text, role in looked_at:
        for reader in readers:
            if reader.template.role == role:
                ratio = reader.agreement(text, anywhere=True)[0]
                if ratio >= NEAR_RATIO and (best is None or ratio > best.ratio):
                    best = Near(reader.name, round(ratio, 2))
    return best


@lru_cache(maxsize=16)
def _first_words(prefix: str) -> tuple[tuple[tuple[int, int], ...], tuple[str, ...], frozenset[str]]:
    """The spans and normalised words of a message's first :data:`_MAX_WORDS` words, once per
    message for all the templates it is compared with (the key is a bounded prefix, so the
    cache never holds a whole request)."""
    spans = tuple((m.start(), m.end()) for m in islice(_WORD.finditer(prefix), _MAX_WORDS))
    words = tuple(_normal(prefix[a:b]) for a, b in spans)
    return spans, words, frozenset(words)


def _normal(word: str) -> str:
    """A word as openings are compared: lower case, curly apostrophes straight, no punctuation
    at its edges."""
    return _EDGE.sub("", word.lower().replace("\u2019", "'"))
