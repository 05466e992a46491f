"""Where a request's grounding passages come from, in the order the gateway looks, and the name
of the source the client, the audit line and the span are told (``x-truthlens-context-source``).

1. ``field``: the context extension field (``truthlens_context``), and ``tool``: tool messages
   (chat) or tool outputs (Responses). An application that sends either has said where its
   context is: nothing else is read as context then, except system messages on a route that
   asks for them.
2. ``template:<name>``: else the first template or layout the route reads that recognises a
   system message, else the user's last message, else an earlier user message
   (:func:`~truthlens.gateway.apis.context.reading.recognise`: the application's text before the
   end user's), a template's copy with its opening edited counting as the template
   (:mod:`~truthlens.gateway.apis.context.tolerant`, tried after the templates, before the layouts);
   the question is then the template's question slot (or a summary prompt's instruction), or the
   user's last message.
3. ``system``: else, on a route with ``system_messages: true``, each paragraph of every system
   (and developer) message.

Several sources are named in that order, comma-separated (``field,tool``); a request with
none has the empty source. Whatever the source, the passages lose the gateway's own warnings,
and an earlier answer the gateway checked is replaced by the passages behind it (the source
then ends in ``chain``: :mod:`~truthlens.gateway.apis.context.chain`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from truthlens.gateway.apis.context import chain, tolerant
from truthlens.gateway.apis.context import passages as split_passages
from truthlens.gateway.apis.context.reading import SYSTEM_ROLES, recognise
from truthlens.gateway.apis.context.settings import ContextSettings

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


@dataclass(frozen=True, slots=True)
class Context:
    """A request's grounding passages, the question they answer, and where they came from."""

    passages: tuple[str, ...]
    question: str
    source: str  # "field", "tool", "system" (comma-joined), "template:<name>"; "" when none
    # With no passages: the template the request came closest to without being read as it
    # (:func:`~truthlens.gateway.apis.context.tolerant.nearest`), said when it is skipped; "" when none.
    near_template: str = ""


def gather(ctx: ContextSettings, *, field: Sequence[str], tools: Sequence[str],
           messages: Sequence[tuple[str, str]], question: str) -> Context:
    """The context of a request whose extension field held ``field``, whose tool messages or
    outputs said ``tools`` and whose messages are ``messages`` (``(role, text)``, instructions
    first); ``question`` is the user's last message."""
    # A tool result of Source:/Content: blocks is one passage per block, without its source lines.
    tools = [p for text in tools for p in split_passages.tool_passages(text)]
    passages = [*field, *tools]
    sources = [name for name, found in (("field", field), ("tool", tools)) if found]
    near = ""
    if not passages:
        # A template's edited copy is read after the templates, before the plain layouts.
        reading = recognise(messages, tolerant.with_edits(ctx.templates))
        if reading is not None:
            return _chained(Context(reading.passages, reading.question or question, reading.source))
        closest = tolerant.nearest(messages, tolerant.tolerant_readers(ctx.templates))
        near = closest.name if closest is not None else ""
    if ctx.system_messages:
        system = [p for role, text in messages if role in SYSTEM_ROLES for p in paragraphs(text)]
        if system:
            passages += system
            sources.append("system")
    return _chained(Context(tuple(passages), question, ",".join(sources), near if not passages else ""))


def _chained(found: Context) -> Context:
    """``found`` less the gateway's warnings, each earlier answer the gateway checked replaced by
    the passages it was checked against (:mod:`~truthlens.gateway.apis.context.chain`); the source
    then ends in ``chain``."""
    passages, chained = chain.MEMORY.expand(found.passages)
    if passages == found.passages:
        return found
    source = ",".join(s for s in (found.source, chain.CHAIN_SOURCE if chained else "") if s)
    return Context(passages, found.question, source, found.near_template)


def paragraphs(text: str) -> list[str]:
    """A system prompt read as context: its paragraphs, each a passage."""
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
