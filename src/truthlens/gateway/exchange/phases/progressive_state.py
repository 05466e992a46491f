"""The bookkeeping of one progressive stream (:mod:`.response_progressive`): the chunks Envoy
waits on, the whole events read with the answer text around each, the edits that change what
the client gets, and which chunks may be answered now and with which bytes."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis.sentences import SentenceSplitter
from truthlens.gateway.exchange import mutations

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
    # Text was added to ``tail`` since the splitter last read it: only new text can complete a
    # sentence, so a chunk that completes no event (an upstream writing a byte at a time sends
    # thousands) costs no rescan of the sentence being read.
    tail_grew: bool = False
    passed: int = 0  # characters of the answer checked and passed
    released_sentences: int = 0
    phase: Phase = "checking"
    held_from: int | None = None  # a second answer began here: nothing from it goes before the end
    second_answer: bool = False  # the text followed is no longer the start of the one answer's text
    warned_sentence: int | None = None
    unchecked: Presentation | None = None  # a sentence check did not run: the verdict the end gets
    flagged_sentence: int | None = None
    ended: bool = False  # the event that ends the answer was read
    gave_up: bool = False  # the answer could not be read: the rest goes on as it comes
    # A Responses terminal event (``response.completed``) was read: it and every later event are
    # held, still read (text after it is a mismatch), and the answer ends with the stream.
    terminal: Event | None = None
    closed: bool = False  # the route fails closed: nothing after the answer's end goes on
    refused: bool = False  # the stream ended with a refusal
    sentence_ends: list[int] = field(default_factory=list)  # where every released sentence ends
    # Sentence checks (:mod:`.progressive_schedule`): the sentences complete and not yet checked,
    # since when the first of them waits, and what the checks so far cost.
    waiting: list[int] = field(default_factory=list)
    waiting_since: float = 0.0
    checks: int = 0
    check_chars: int = 0  # characters the checks read (context and run overhead included)
    check_s: float = 0.0  # seconds spent in checks: the route's total_ms bounds the whole exchange
    # A warning put inside the answer: before answer character ``warn_at``, ``warn_len`` characters.
    warn_at: int | None = None
    warn_len: int = 0


def safe_until(p: Progressive, end_of_stream: bool) -> int:
    """The body offset before which every byte may be answered now."""
    if end_of_stream or p.phase in ("stopped", "open"):
        return FOREVER
    limit = p.read  # never half an event (an upstream verdict is dropped whole)
    if p.phase == "checking":
        limit = next((e.start for e in p.events if e.text_after > p.passed), limit)
    if p.held_from is not None:
        limit = min(limit, p.held_from)
    return limit


def replies(p: Progressive, *, end_of_stream: bool) -> list[pb.ProcessingResponse]:
    limit = safe_until(p, end_of_stream)
    replies: list[pb.ProcessingResponse] = []
    for chunk in drain(p, limit):
        out = edited(p, chunk)
        if out == chunk.body:
            replies.append(mutations.passthrough("response_body"))
        else:
            replies.append(mutations.chunk_reply("response_body", out))
    if not replies:
        return replies  # nothing answered: no event became wholly answered either
    if p.events and p.chunks:
        first = p.chunks[0].start
        p.events = [e for e in p.events if e.end > first]
    elif not p.chunks:
        p.events.clear()
    return replies


def drain(p: Progressive, limit: int = FOREVER) -> list[Chunk]:
    out: list[Chunk] = []
    while p.chunks and p.chunks[0].start + len(p.chunks[0].body) <= limit:
        out.append(p.chunks.popleft())
    return out


def edited(p: Progressive, chunk: Chunk) -> bytes:
    """``chunk``'s bytes with the edits that touch it: replaced bytes left out, each replacement
    where its range starts."""
    a, b = chunk.start, chunk.start + len(chunk.body)
    out = bytearray()
    pos = a
    touched = False
    for edit in sorted(p.edits, key=lambda e: (e.start, e.end)):
        inserts_here = a <= edit.start < b or (edit.start == b and edit.start == edit.end == p.received)
        if not inserts_here and not (edit.start < a < edit.end):
            continue
        touched = True
        if edit.start >= pos:
            out += chunk.body[pos - a : edit.start - a]
        if inserts_here:
            out += edit.replacement
        pos = max(pos, min(edit.end, b))
    if not touched:
        return chunk.body
    out += chunk.body[pos - a :]
    p.edits = [e for e in p.edits if e.end > b or (e.start >= b and not (e.start == b == e.end == p.received))]
    return bytes(out)
