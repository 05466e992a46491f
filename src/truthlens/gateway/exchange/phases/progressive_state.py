"""The bookkeeping of one progressive stream (:mod:`.response_progressive`): the chunks Envoy
waits on, the whole events read with the answer text around each, and the edits that change
what the client gets."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from truthlens.gateway.apis.sentences import SentenceSplitter

if TYPE_CHECKING:
    from truthlens.gateway.apis import sse
    from truthlens.gateway.apis.interface import Presentation, ProgressiveCodec

FOREVER = 1 << 62  # an edit that drops every later byte (a blocked stream)
# checking: sentences are checked and released; flowing: every whole event goes on as it comes
# (read for the end's verdict); open: every byte goes on unread; stopped: nothing more goes on.
Phase = Literal["checking", "flowing", "open", "stopped"]


@dataclass(slots=True)
class Chunk:
    start: int  # the chunk's first byte, as an offset into the response body
    body: bytes


@dataclass(slots=True)
class Event:
    """A whole event of the body and the answer text before and after it."""

    start: int
    end: int
    text_before: int
    text_after: int
    event: sse.SSEEvent


@dataclass(slots=True)
class Edit:
    """Body bytes ``[start, end)`` replaced by ``replacement`` (sent where ``start`` is)."""

    start: int
    end: int
    replacement: bytes


@dataclass(slots=True)
class Progressive:
    """One progressive stream's bookkeeping."""

    codec: ProgressiveCodec  # the endpoint's reading and rendering (also the stream's ``codec``)
    splitter: SentenceSplitter = field(default_factory=SentenceSplitter)
    chunks: deque[Chunk] = field(default_factory=deque)  # received, not yet answered
    events: list[Event] = field(default_factory=list)  # whole events not wholly answered yet
    edits: list[Edit] = field(default_factory=list)
    received: int = 0  # body bytes received
    read: int = 0  # body bytes read into whole events
    length: int = 0  # characters of the answer so far
    # The answer from ``recent_base`` on: the sentences a check reads before the new ones (a
    # bounded window, so that each check costs the same however long the answer grows).
    recent: str = ""
    recent_base: int = 0
    released_ends: list[int] = field(default_factory=list)  # where each released sentence ends
    tail: str = ""  # the answer from ``tail_base`` on: the sentence the splitter is reading
    tail_base: int = 0
    passed: int = 0  # characters of the answer checked and passed
    released_sentences: int = 0
    phase: Phase = "checking"
    held_from: int | None = None  # a second answer began here: nothing from it goes before the end
    warned_sentence: int | None = None
    unchecked: Presentation | None = None  # a sentence check did not run: the verdict the end gets
    flagged_sentence: int | None = None
    ended: bool = False  # the event that ends the answer was read
