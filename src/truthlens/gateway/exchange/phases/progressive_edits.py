"""The edits that change what the client gets of a progressive stream (:mod:`.response_progressive`):
the verdict in place of the event that ends the answer, the stream stopped at a sentence with
the verdict and the refusal, the warning put inside the answer or after it, and the verdict's
details as the client's text has them (span offsets past a warning put inside the answer move by
its length)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from truthlens.gateway.apis.interface import WARNING_POSITION_KEY
from truthlens.gateway.exchange.phases.progressive_state import FOREVER, Edit, Event, Progressive

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Presentation


def place_verdict(p: Progressive, end: Event, shown: Presentation) -> None:
    """The verdict in place of ``end`` (which follows it); every later event flows (but what
    :func:`_read` drops after the answer's end)."""
    p.edits = [e for e in p.edits if not (end.start <= e.start and e.end <= end.end and e.start < e.end)]
    p.edits.append(Edit(end.start, end.end, p.codec.verdict_before(shown, _details(shown, p), end.event)))
    p.phase = "flowing"
    p.held_from = None


def _details(shown: Presentation, p: Progressive) -> dict[str, Any]:
    """The verdict's details, with what progressive release did; span offsets index the text
    the client got: a warning put inside the answer moves the spans after it by its length, one
    after the answer moves none."""
    details = dict(shown.late_details())
    if p.warn_at is not None:
        details = _spans_after(details, p.warn_at, p.warn_len)
        details[WARNING_POSITION_KEY] = "inline"
    details["progressive"] = {"released_sentences": p.released_sentences, "flagged_sentence": p.flagged_sentence,
                              "warned_before_sentence": p.warned_sentence}
    return details


def _spans_after(details: dict[str, Any], at: int, by: int) -> dict[str, Any]:
    """``details`` with each span offset at or past answer character ``at`` moved ``by`` later."""
    choices = []
    for choice in details.get("choices", ()):
        if choice.get("spans"):
            spans = [{**span, "start": span["start"] + (by if span["start"] >= at else 0),
                      "end": span["end"] + (by if span["end"] > at else 0)} for span in choice["spans"]]
            choice = {**choice, "spans": spans}
        choices.append(choice)
    return {**details, "choices": choices}


def stop(p: Progressive, cut: int, shown: Presentation) -> None:
    """End the stream at answer character ``cut``: what passed stands, the verdict and the
    refusal (naming how many sentences went out) follow it, and nothing after reaches the client."""
    refusal = shown.refusal
    if refusal is not None:
        note = f" {p.released_sentences} sentence(s) had been released before the flagged one."
        shown = replace(shown, refusal=replace(refusal, message=refusal.message + note))
        p.refused = True
    at, head = _split_at(p, cut)
    if p.held_from is not None and p.held_from < at:  # nothing from a second answer on went out
        at, head = p.held_from, b""
    p.edits = [e for e in p.edits if e.start < at]
    p.edits.append(Edit(at, FOREVER, head + p.codec.verdict_before(shown, _details(shown, p), None)))
    p.phase = "stopped"


def warn_before(p: Progressive, cut: int, warning: str, sentence: int) -> None:
    """The warning as content just before answer character ``cut``, the start of sentence
    number ``sentence``."""
    note = warning.strip()
    note = f"\n\n{note}\n\n" if cut > 0 else f"{note}\n\n"
    codec = p.codec
    p.warned_sentence = sentence
    p.warn_at, p.warn_len = cut, len(note)
    for item in p.events:
        if item.text_after > cut:
            if item.text_before >= cut:
                p.edits.append(Edit(item.start, item.start, codec.text_event(note)))
            else:
                first, rest = codec.cut_event(item.event, cut - item.text_before)
                p.edits.append(Edit(item.start, item.end, first + codec.text_event(note) + rest))
            return


def _split_at(p: Progressive, cut: int) -> tuple[int, bytes]:
    """Where in the body the answer passes character ``cut``, and the passed head of the event
    that holds it (re-encoded; empty when the cut falls between events)."""
    codec = p.codec
    for item in p.events:
        if item.text_after > cut:
            if item.text_before >= cut:
                return item.start, b""
            return item.start, codec.cut_event(item.event, cut - item.text_before)[0]
    return p.read, b""


def warn_after(p: Progressive, end: Event, warning: str) -> None:
    """The warning as content after the answer, just before ``end`` (flagged only across
    released sentences, or everything read was released)."""
    p.edits.append(Edit(end.start, end.start, p.codec.text_event("\n\n" + warning.strip())))
    p.warned_sentence = p.released_sentences
