"""A prompt template read backwards: from the text a template renders to what went into its slots.

A template is text with slots, written as the frameworks write theirs: ``{context}`` (the
retrieved passages, required), ``{question}`` (the user's question), ``{answer}`` (an earlier
answer a refine prompt asks the model to improve: read as context, since the model is told to
keep it) and ``{any}`` (text that is read and ignored, such as a system prompt appended after the
context); ``{{`` and ``}}`` are literal braces. Everything else is literal and must be there,
in order, from the message's first character to its last (whitespace runs match any whitespace
run, so a stripped or re-wrapped rendering still matches): a message that merely contains a
template's words, or one of its slots' labels, is not read as that template.

Slots are matched without a general regex engine (no backtracking over a message that may be
megabytes long): the literals are found in order. Where a literal occurs more than once, which
copy is the template's follows from who writes what: the question slot holds the end user's text,
who can type any of the template's words into it, and the context slot holds the application's
retrieved passages. So a question takes the longest text (the last copy of the literal after it)
and a context or an earlier answer the shortest (the first copy): a label the user typed inside
the question (``\nContext: ...``, Haystack's ``Answer: x\n\nContext:``, LlamaIndex's separator
line and ``Query:``) stays in the question, and never adds to the context. A passage that happens
to hold the next literal loses its end to the question: less context, never text the user wrote
(the trust boundary, docs/security.md).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from typing import Literal

SlotName = Literal["context", "question", "answer", "any"]
SLOT_NAMES: tuple[SlotName, ...] = ("context", "question", "answer", "any")
Role = Literal["user", "system"]
Task = Literal["qa", "summary"]
# How a context slot's text splits into passages (see :mod:`~truthlens.gateway.apis.context.passages`).
Separator = Literal["documents", "indented", "lines", "none"]
SEPARATORS: tuple[Separator, ...] = ("documents", "indented", "lines", "none")

# Slots the end user's text may fill (or that are ignored): these take the last copy of the next
# literal, so whatever they hold stays theirs; the context and an earlier answer take the first.
_USER_SLOTS: frozenset[SlotName] = frozenset({"question", "any"})
_SLOT = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
# A template's fixed text, all literals together, in non-space characters: fewer is a word or two
# that ordinary chat holds (a custom "{context} the {question}" read every chat with " the ").
MIN_FIXED_CHARS = 4
# Occurrences of one literal tried per slot: bounds the work on a hostile message that repeats
# a template's words many times (a real rendering has one or two).
_MAX_CANDIDATES = 16


class TemplateError(ValueError):
    """A template text that cannot be read back unambiguously; the message says why."""


@dataclass(frozen=True, slots=True)
class Template:
    """One template: where it is written (``role``), its text, how its context splits into
    passages, and what the detector is asked when it has no question slot (a summary prompt's
    instruction)."""

    name: str
    text: str
    role: Role = "user"
    separator: Separator = "documents"
    instruction: str | None = None  # the question of a template without a {question} slot
    task: Task = "qa"
    source: str = ""  # where the text was read (framework, version, file), for readers
    _head: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _middles: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _tail: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _slots: tuple[SlotName, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        literals, slots = _split(self.text)
        _validate(literals, slots, self.role, self.instruction)
        head, tail = _literal_pattern(literals[0]), _literal_pattern(literals[-1])
        object.__setattr__(self, "_slots", tuple(slots))
        object.__setattr__(self, "_head", re.compile(head) if head else None)
        object.__setattr__(self, "_tail", re.compile(tail + r"\Z") if tail else None)
        # _validate: every literal between two slots has text, so each has a pattern
        object.__setattr__(self, "_middles", tuple(re.compile(_literal_pattern(t) or "") for t in literals[1:-1]))

    @property
    def slots(self) -> tuple[SlotName, ...]:
        return self._slots

    def read(self, text: str) -> dict[SlotName, str] | None:
        """What went into each slot, stripped, when ``text`` is this template rendered; None
        when it is not (or its context or question came out empty)."""
        pos, end = 0, len(text)
        if self._head is not None:
            m = self._head.match(text)
            if m is None:
                return None
            pos = m.end()
        if self._tail is not None:
            m = self._tail.search(text, pos)
            if m is None:
                return None
            end = m.start()
        values = self._fill(text, pos, end, 0)
        if values is None:
            return None
        filled = {slot: value.strip() for slot, value in zip(self._slots, values, strict=True)}
        if not filled["context"] or ("question" in filled and not filled["question"]):
            return None
        return filled

    def _fill(self, text: str, pos: int, end: int, i: int) -> list[str] | None:
        """The values of slots ``i``.. between ``pos`` and ``end``: each middle literal tried at
        the occurrences its slot prefers (module docstring: the longest for text the end user
        writes, the shortest for the application's context)."""
        if i == len(self._slots) - 1:
            return [text[pos:end]]
        found = self._middles[i].finditer(text, pos, end)
        if self._slots[i] in _USER_SLOTS:
            # the last copies, however many the user typed before them (one linear scan)
            spans = [(m.start(), m.end()) for m in deque(found, maxlen=_MAX_CANDIDATES)][::-1]
        else:
            spans = [(m.start(), m.end()) for m in islice(found, _MAX_CANDIDATES)]
        for start, after in spans:
            rest = self._fill(text, after, end, i + 1)
            if rest is not None:
                return [text[pos:start], *rest]
        return None


def _split(text: str) -> tuple[list[str], list[SlotName]]:
    """The literal texts around each slot (one more literal than slots) and the slots' names."""
    literals, slots, current, pos = [], [], [], 0
    for m in _SLOT.finditer(text):
        current.append(text[pos:m.start()])
        pos = m.end()
        token = m.group(0)
        if token in ("{{", "}}"):
            current.append(token[0])
            continue
        name = m.group(1)
        if name is None:
            raise TemplateError(f"a single {token!r} at character {m.start()} (write {token * 2} for a literal brace)")
        if name not in SLOT_NAMES:
            raise TemplateError(f"unknown slot {{{name}}} (expected {', '.join('{' + s + '}' for s in SLOT_NAMES)})")
        literals.append("".join(current))
        current = []
        slots.append(name)
    current.append(text[pos:])
    literals.append("".join(current))
    return literals, slots


def _validate(literals: list[str], slots: list[SlotName], role: Role, instruction: str | None) -> None:
    for name in SLOT_NAMES:
        if slots.count(name) > 1:
            raise TemplateError(f"{{{name}}} appears {slots.count(name)} times (once at most)")
    if "context" not in slots:
        raise TemplateError("has no {context} slot")
    if role == "user" and "question" not in slots and not instruction:
        raise TemplateError("a user-message template needs a {question} slot (or a fixed instruction)")
    for i in range(1, len(slots)):
        if not literals[i].strip():
            raise TemplateError(f"{{{slots[i - 1]}}} and {{{slots[i]}}} need literal text between them "
                                "(else where one ends and the other starts is a guess)")
    if not any(text.strip() for text in literals):
        raise TemplateError("has no literal text: it would match any message")
    fixed = [text.strip() for text in literals if text.strip()]
    if sum(len("".join(t.split())) for t in fixed) < MIN_FIXED_CHARS or all(_bare_word(t) for t in fixed):
        raise TemplateError(f"its fixed text ({' … '.join(repr(t) for t in fixed)}) is too short to tell the template "
                            "from ordinary chat that contains it: give the labels or sentences the application "
                            "writes around the slots (e.g. 'Docs:\n{context}\n\nQuestion: {question}')")


def _bare_word(text: str) -> bool:
    """One word of letters alone ("the", "and", "Question"): prose is full of them; a label has
    its colon, a sentence its several words."""
    return len(text.split()) == 1 and text.isalpha()


def _literal_pattern(text: str) -> str | None:
    """The literal as a pattern whose whitespace runs match any whitespace run (and any around
    it); None when it is only whitespace (the template starts or ends with a slot)."""
    words = text.split()
    if not words:
        return None
    return r"\s*" + r"\s+".join(re.escape(w) for w in words) + r"\s*"
