"""Which messages a request's context may be in, and the first reader that finds it there.

Who wrote a message decides what it may supply (the trust boundary, docs/security.md). A system
or developer message is the application's: a template there carries the context, and the
question is then the user's last message, whatever that message holds: text the end user typed
("Context: ... Question: ...") never replaces or adds to context the application's own prompt
carries. Only when no system message carries context is the user's side read: the last user
message first (a template that carries the question), then the earlier ones, newest first (a
follow-up turn is checked against the context of the turn that carried it; its question is the
follow-up). Within a message, the readers are tried in the route's order: an application's own
templates, then the frameworks' (:mod:`~truthlens.gateway.apis.context.builtin`), then the plain
layouts a route names (:mod:`~truthlens.gateway.apis.context.plain`). The first that reads a
message whole decides; nothing is guessed from a message no reader recognises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from truthlens.gateway.apis.context import passages as split_passages
from truthlens.gateway.apis.context import plain
from truthlens.gateway.apis.context.builtin import TEMPLATES
from truthlens.gateway.apis.context.templates import Role, Separator, Template

SOURCE_PREFIX = "template:"  # x-truthlens-context-source of a request whose context a reader found
SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True, slots=True)
class Reading:
    """What a reader found in one message."""

    name: str  # the template or layout
    passages: tuple[str, ...]
    question: str | None  # None: the user's last message is the question

    @property
    def source(self) -> str:
        return SOURCE_PREFIX + self.name


class Reader(Protocol):
    """A template or layout: its name, and the reading of one message in one role (None: not it)."""

    @property
    def name(self) -> str: ...

    def read(self, text: str, role: Role) -> Reading | None: ...


@dataclass(frozen=True, slots=True)
class TemplateReader:
    """A template (built in or the route's own)."""

    template: Template

    @property
    def name(self) -> str:
        return self.template.name

    def read(self, text: str, role: Role) -> Reading | None:
        t = self.template
        if role != t.role:
            return None
        slots = t.read(text)
        if slots is None:
            return None
        found = split_passages.split(slots["context"], t.separator)
        if slots.get("answer"):  # a refine prompt's earlier answer: the model is told to keep it
            found.append(slots["answer"])
        # A summary prompt's instruction is its question, in a system message too (LangChain's
        # summarization tutorial sends the prompt alone, with no user message).
        question = slots.get("question") or t.instruction
        return Reading(t.name, tuple(found), question) if found else None


@dataclass(frozen=True, slots=True)
class LayoutReader:
    """A plain layout (``plain-labels``, ``plain-delimited``) or the route's own delimiters."""

    name: str
    kind: Literal["labels", "delimited", "between"]
    separator: Separator = "documents"
    start: str = ""  # the route's own delimiters (kind "between")
    end: str = ""
    role: Role | None = None  # the route's own delimiters are read in this role only

    def read(self, text: str, role: Role) -> Reading | None:
        if self.role is not None and role != self.role:
            return None
        if self.kind == "labels":
            layout = plain.labelled(text, role)
        elif self.kind == "delimited":
            layout = plain.delimited(text, role)
        else:
            layout = plain.between(text, role, self.start, self.end)
        if layout is None:
            return None
        found = layout.passages or tuple(split_passages.split(layout.context, self.separator))
        return Reading(self.name, found, layout.question) if found else None


LAYOUTS: tuple[LayoutReader, ...] = (
    LayoutReader("plain-labels", "labels"),
    LayoutReader("plain-delimited", "delimited"),
)
# The frameworks' exact templates: read by default. The plain layouts are read on a route that
# names them (``plain``): labels an end user can type, over text that is as often the user's own
# situation, a persona or the date as retrieved material (docs/context.md, bench.chat_reading).
FRAMEWORKS: tuple[Reader, ...] = tuple(TemplateReader(t) for t in TEMPLATES)
BUILTIN: tuple[Reader, ...] = (*FRAMEWORKS, *LAYOUTS)
BUILTIN_BY_NAME = {r.name: r for r in BUILTIN}


def recognise(messages: Sequence[tuple[str, str]], readers: Sequence[Reader]) -> Reading | None:
    """The context the ``readers`` find in ``messages`` (``(role, text)`` pairs in order): in
    the first system or developer message one of them reads (the question is then the user's
    last message), else in the user's last message, else in an earlier user message, newest
    first (the question is then the user's last message)."""
    if not readers:
        return None
    for role, text in messages:
        if role in SYSTEM_ROLES and text.strip():
            reading = _first(readers, text, "system")
            if reading is not None:
                return reading
    users = [text for role, text in messages if role == "user" and text.strip()]
    for turn, text in enumerate(reversed(users)):
        reading = _first(readers, text, "user")
        if reading is not None:
            return reading if turn == 0 else replace(reading, question=None)
    return None


def _first(readers: Sequence[Reader], text: str, role: Role) -> Reading | None:
    for reader in readers:
        reading = reader.read(text, role)
        if reading is not None:
            return reading
    return None
