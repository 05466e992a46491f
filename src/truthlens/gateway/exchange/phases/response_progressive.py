"""Response body (SSE), ``streaming: progressive``: a held answer released sentence by sentence,
each sentence checked against the context together with the answer before it.

The processor holds *replies*, not bytes. Envoy sends every STREAMED chunk at once and keeps it
until the processor answers it; the processor answers chunk j (with its own bytes, unchanged)
only once every sentence that chunk j's events touch has passed its check. So Envoy, not the
processor, keeps every byte not yet released: a processor that dies or is stopped leaves Envoy
with the unanswered chunks, which it then sends on unprocessed (``failure_mode_allow``) or ends
the stream with a reset (fail-closed): the client gets every byte or a visible failure, never an
answer with a gap. A chunk is answered with other bytes only where something changes:
an upstream-written verdict dropped, the warning put before a flagged sentence, the verdict
before the end of the answer, or the stream ended by a block (the passed part of the event that
holds the flagged sentence's start, the verdict, the error event; every later byte dropped).

The text followed is the one the whole-answer check reads (the codec's ``text_added``). The
completed sentences are checked together when the schedule says so (:mod:`.progressive_schedule`:
the first at once, then as their cost allows), each check reading the answer up to the last of
them (the released sentences within :data:`WINDOW_CHARS` before them, the new ones); a span inside
a new sentence flags it (spans in sentences already released stand: the whole answer's check at
the end sees them). The whole answer is still checked by the route's mode at the end, and its
verdict sent as in passthrough; the route's ``budgets.total_ms`` bounds every check of the
exchange together. When sentence k is flagged: ``block`` ends the stream there; the body action
sends the warning before sentence k and lets the rest flow (checked at the end). A stream with
more than one answer (``n`` > 1, several message items, a chat answer with both content and
refusal text) is held from the second answer on and released by the end's verdict. A sentence
check that cannot run (detector unavailable, budget spent, drain) releases the rest as it comes,
checked at the end (a fail-closed route refuses instead). What follows the answer's end is not
part of it: chat events after ``data: [DONE]`` go on only if they carry no data (nothing on a
fail-closed route); a Responses stream is held from its terminal event to the stream's end and
read to it, so text after ``response.completed`` is a mismatch, as on a held route.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import replace
from typing import TYPE_CHECKING

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.detector.types import Detection, DetectionInput
from truthlens.gateway.apis import sse
from truthlens.gateway.apis.interface import BodyError
from truthlens.gateway.exchange import audit, mutations
from truthlens.gateway.exchange.lifecycle import Draining
from truthlens.gateway.exchange.phases import progressive_edits as edits
from truthlens.gateway.exchange.phases import progressive_schedule as schedule
from truthlens.gateway.exchange.phases.check import skip
from truthlens.gateway.exchange.phases.progressive_state import Chunk, Edit, Event, Progressive, drain, replies
from truthlens.gateway.exchange.phases.response_stream import judge
from truthlens.gateway.policy.checking import BudgetedDetector
from truthlens.gateway.policy.explanations import flag_reason
from truthlens.gateway.policy.presentation import present
from truthlens.modes.base import ChoiceVerdict, Verdict

if TYPE_CHECKING:
    from collections.abc import Iterable

    from truthlens.detector.types import Span
    from truthlens.gateway.apis.interface import Presentation
    from truthlens.gateway.exchange.phases.state import CheckedRequest, Runtime, StreamedResponse, StreamState

# How much of the released answer a sentence check reads before the new sentences: enough for
# the claims a sentence leans on ("It was completed in ..."), bounded so that a check's cost
# follows the sentences it checks, not the answer's length (whole released sentences, at least
# the last one).
WINDOW_CHARS = 400


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> list[pb.ProcessingResponse]:
    """The replies this chunk lets go: none while its sentences wait for their check, several
    when a check releases earlier chunks too (one per chunk, in order)."""
    st = state.streamed
    assert st is not None and st.progressive is not None
    p = st.progressive
    chunk = msg.response_body
    p.chunks.append(Chunk(p.received, chunk.body))
    p.received += len(chunk.body)
    if p.phase in ("stopped", "open"):
        return replies(p, end_of_stream=chunk.end_of_stream)
    checked = state.checked
    if checked is not None:
        p.closed = checked.route.fail_policy == "closed"
    try:
        events = st.decoder.feed(chunk.body)
        if chunk.end_of_stream:
            events += st.decoder.flush()
    except sse.SSEError as exc:
        _give_up(state, p, rt, exc.reason, str(exc), framed=False)
        return replies(p, end_of_stream=chunk.end_of_stream)
    end: Event | None = None
    for event in events:
        read = _read(p, event)
        if isinstance(read, str):
            _give_up(state, p, rt, read, "an event of the stream could not be read")
            p.read += len(event.raw)  # it goes on after the verdict; the events after it are still read
        elif read is not None and end is None:
            end = read
    if end is None and chunk.end_of_stream and p.terminal is not None and not p.ended and p.phase in (
            "checking", "flowing"):
        end = p.terminal  # a Responses answer ends with its stream once a terminal event was read
        p.ended = True
    if checked is not None and p.phase == "checking":
        if p.received > checked.route.max_body_bytes:
            _give_up(state, p, rt, "too_large",
                     f"the stream is over the route's max_body_bytes ({checked.route.max_body_bytes})")
        elif end is None:
            await _check_sentences(state, p, checked, rt)
    if end is not None and p.phase in ("checking", "flowing"):
        if checked is not None:
            await _finish(state, p, checked, rt, end)
        elif p.unchecked is not None:
            edits.place_verdict(p, end, p.unchecked)
        st.finished = st.done_seen = True
    if chunk.end_of_stream and not p.ended and p.phase in ("checking", "flowing"):
        _give_up(state, p, rt, "sse_framing", "the stream ended before the answer did")
    st.refused = st.refused or p.refused
    return replies(p, end_of_stream=chunk.end_of_stream)


def contain(
    state: StreamState, st: StreamedResponse, rt: Runtime, checked: CheckedRequest | None, reason: str
) -> list[pb.ProcessingResponse]:
    """A bug while this stream was read: a fail-closed route ends it after the sentences that
    passed, with its refusal (the unchecked rest never goes out); any other route gets every
    chunk not answered yet, unchanged, so nothing is lost."""
    p = st.progressive
    if p is not None and checked is not None and checked.route.fail_policy == "closed" and p.phase != "stopped":
        shown = skip(state, rt, checked.route, checked.decision.name, reason, "the stream could not be read",
                     upstream=True)
        if shown.refusal is not None:
            edits.stop(p, p.passed, shown)
            st.refused = True
            return replies(p, end_of_stream=False)
    return release_all(st)


def release_all(st: StreamedResponse) -> list[pb.ProcessingResponse]:
    """Every chunk not yet answered, unchanged (failure containment): nothing is lost."""
    p = st.progressive
    if p is None:
        return []
    p.phase = "flowing"
    p.edits.clear()
    p.held_from = None
    return [mutations.passthrough("response_body") for _ in drain(p)]


# -- reading ------------------------------------------------------------------------------------


def _read(p: Progressive, event: sse.SSEEvent) -> Event | str | None:
    """Account for one whole event: the text it adds, an upstream verdict dropped. Returns the
    event when it ends the answer, a reason when it cannot be read, else None."""
    codec = p.codec
    start = p.read
    p.read += len(event.raw)
    scrubbed = codec.scrub(event)
    if scrubbed is None:
        p.edits.append(Edit(start, p.read, b""))
        return None
    if scrubbed is not event:
        p.edits.append(Edit(start, p.read, scrubbed.raw))
    if p.phase == "stopped":
        return None
    if p.ended:
        # After the answer's end: no data event reaches the client (the check never read it),
        # and on a fail-closed route nothing at all does. After giving up, everything goes on
        # (but a verdict the upstream wrote).
        if not p.gave_up and (p.closed or scrubbed.has_data):
            p.edits.append(Edit(start, p.read, b""))
        return None
    before = p.length
    try:
        ends = codec.add(scrubbed)
    except (BodyError, ValueError) as exc:
        p.read = start  # the verdict goes before the event that cannot be read, never glued onto it
        return str(getattr(exc, "reason", "sse_framing"))
    added = codec.text_added()
    if added is None:
        p.second_answer = True
        if p.held_from is None:  # a second answer: progressive release follows one
            p.held_from = start
    elif added:
        p.length += len(added)
        if p.phase == "checking":
            p.tail += added
            p.tail_grew = True
            p.recent += added
    item = Event(start, p.read, before, p.length, scrubbed)
    p.events.append(item)
    if ends:
        p.ended = True
        return p.terminal or item  # a Responses verdict goes before its first terminal event
    if codec.answer_complete and p.terminal is None:
        # Held from here to the stream's end, and still read: text after it is a mismatch.
        p.terminal = item
        p.held_from = start if p.held_from is None else min(p.held_from, start)
    return None


# -- checking -----------------------------------------------------------------------------------


async def _check_sentences(state: StreamState, p: Progressive, checked: CheckedRequest, rt: Runtime) -> None:
    """Check the sentences waiting, when the schedule says so (one detector call for all of them)."""
    now = time.monotonic()
    schedule.queue(p, _sentence_ends(p, final=False), now)
    if not p.waiting:
        return
    query = checked.request.grounded_query()
    context_chars = sum(map(len, query.passages)) + len(query.question)
    base = _window_start(p)
    if not schedule.due(p, context_chars, p.passed - base, now):
        return
    ends = list(p.waiting)
    start = p.passed
    prefix = p.recent[: ends[-1] - base]
    chars = schedule.cost(context_chars, p.passed - base, p)
    detection = await _detect(state, checked, rt, prefix)
    schedule.spent(p, chars, time.monotonic() - now)
    if detection is None:
        return
    if detection.status == "unavailable":
        _stop_or_flow(state, p, rt, checked, detection.reason or "detector_error")
        return
    detection = _moved(detection, base)  # offsets into the answer, as the client's text has them
    flagged = _first_flagged(detection, ends, start)
    for end in ends[:flagged]:
        _passed(p, end)
    if flagged is None:
        return
    p.flagged_sentence = _first_sentence(p, detection.spans, ends)
    route = checked.route
    if "block" in route.actions:
        shown = _sentence_presentation(state, checked, rt, detection)
        edits.stop(p, p.passed, shown)
    elif "body" in route.actions:
        edits.warn_before(p, p.passed, route.warning.text, p.released_sentences)
        p.phase = "flowing"
    else:  # nothing to do about it now: the end's verdict says so
        for end in ends[flagged:]:
            _passed(p, end)


def _sentence_ends(p: Progressive, *, final: bool) -> list[int]:
    """The ends of the sentences the answer's new text completes (``final``: it is whole)."""
    if not (p.tail_grew or final):
        return []
    p.tail_grew = False
    ends = p.splitter.feed(p.tail, final=final, base=p.tail_base)
    start = p.splitter.start
    p.tail = p.tail[start - p.tail_base :]
    p.tail_base = start
    return ends


def _window_start(p: Progressive) -> int:
    """Where the text a sentence check reads begins: the released sentences that end within
    :data:`WINDOW_CHARS` before the new ones (at least the last one), the rest dropped from
    ``recent``."""
    floor = p.passed - WINDOW_CHARS
    keep = next((i for i, end in enumerate(p.released_ends) if end >= floor), len(p.released_ends))
    keep = min(keep, max(0, len(p.released_ends) - 1))
    base = p.released_ends[keep - 1] if keep > 0 else 0
    if base > p.recent_base:
        p.recent = p.recent[base - p.recent_base :]
        p.recent_base = base
        del p.released_ends[: keep - 1]
    return p.recent_base


def _passed(p: Progressive, end: int) -> None:
    p.passed = end
    p.released_sentences += 1
    p.released_ends.append(end)
    p.sentence_ends.append(end)


def _first_flagged(detection: Detection, ends: list[int], start: int) -> int | None:
    """The index into ``ends`` of the first sentence a span of ``detection`` (answer offsets)
    falls in (spans before ``start`` are in sentences already released); None when none does."""
    first: int | None = None
    for raw in detection.spans:
        if raw.end <= start:
            continue
        at = max(raw.start, start)
        k = next((i for i, end in enumerate(ends) if at < end), None)
        if k is not None and (first is None or k < first):
            first = k
    return first


def _first_sentence(p: Progressive, spans: Iterable[Span], later_ends: list[int]) -> int | None:
    """The index of the first sentence of the answer that holds one of ``spans`` (answer
    offsets): a released one too (then the whole answer's check flagged text already out);
    ``later_ends``: the ends of the sentences after the released ones."""
    ends = p.sentence_ends + [e for e in later_ends if not p.sentence_ends or e > p.sentence_ends[-1]]
    starts = [s.start for s in spans]
    if not starts:
        return None
    return min(bisect_right(ends, min(starts)), len(ends))


def _moved(detection: Detection, by: int) -> Detection:
    """``detection`` with its spans ``by`` characters later (a check read the answer from ``by``)."""
    if not by or not detection.spans:
        return detection
    return replace(detection, spans=tuple(replace(s, start=s.start + by, end=s.end + by) for s in detection.spans))


async def _detect(state: StreamState, checked: CheckedRequest, rt: Runtime, prefix: str) -> Detection | None:
    """The detector's check of ``prefix`` within what is left of the exchange's budget; None
    when a drain stopped it (the rest then flows)."""
    route = checked.route
    st = state.streamed
    assert st is not None and st.progressive is not None
    query = checked.request.grounded_query()
    left = route.budgets.total_s - st.progressive.check_s
    deadline = time.monotonic() + left
    detector = BudgetedDetector(checked.services.detector, route.budgets.detection_s, deadline, rt.telemetry,
                                route.mode)
    item = DetectionInput(context=query.passages, question=query.question, answer=prefix)
    try:
        with rt.telemetry.span("truthlens.sentence_check", chars=len(prefix)):
            detection = await rt.lifecycle.bounded(detector.detect(item, threshold=route.threshold))
    except Draining:
        _stop_or_flow(state, st.progressive, rt, checked, "draining")
        return None
    if detection.status == "unavailable" and left < route.budgets.detection_s and time.monotonic() >= deadline:
        return Detection.unavailable("budget_exhausted")  # the exchange's budget, not the call's, ran out
    return detection


def _sentence_presentation(
    state: StreamState, checked: CheckedRequest, rt: Runtime, detection: Detection
) -> Presentation:
    """What the client sees of an answer blocked at a sentence: the route's presentation of
    the sentence check's verdict (recorded like the end's)."""
    verdict = Verdict(mode=checked.route.mode, choices=(ChoiceVerdict(index=0, detection=detection),))
    shown = present(checked.route, checked.decision.name, verdict, n_choices=1,
                    include_spans=checked.include_spans, latency_s=time.monotonic() - state.started,
                    context_source=checked.request.context_source, task=checked.task)
    rt.telemetry.record_detection(checked.decision.name, checked.route.mode, verdict.status, verdict.score)
    audit.record(state, rt, shown, decision=checked.decision.name, mode=verdict.mode, verdict=verdict.status,
                 score=verdict.score, reason=flag_reason([detection]),
                 context_source=checked.request.context_source, task=checked.task)
    state.checked = None
    return shown


async def _finish(
    state: StreamState, p: Progressive, checked: CheckedRequest, rt: Runtime, end: Event
) -> None:
    """The answer ended: check it whole with the route's mode (within what is left of the
    exchange's budget); its verdict decides the sentences not yet released and goes before ``end``."""
    budgets = checked.route.budgets
    left = replace(budgets, total_s=max(budgets.total_s - p.check_s, 1e-6))
    checked = replace(checked, route=replace(checked.route, budgets=left))
    verdict, shown = await judge(state, checked, rt, p.codec.answers())
    spans = verdict.choices[0].detection.spans if verdict is not None and verdict.choices else ()
    if p.phase == "flowing":  # everything read was released: only the verdict (and warning) remain
        if shown.warning is not None and p.warned_sentence is None and shown.refusal is None:
            edits.warn_after(p, end, shown.warning.text)
        if verdict is not None and verdict.status == "detected" and spans:
            p.flagged_sentence = _first_sentence(p, spans, [])  # the verdict's spans say which
        edits.place_verdict(p, end, shown)
        return
    ends = [*p.waiting, *_sentence_ends(p, final=True)]
    p.waiting.clear()
    cut = None
    if verdict is not None and verdict.status == "detected" and verdict.choices:
        # The spans index the whole answer's text. Once a second answer (or, in chat, a second
        # field) began, the text followed here need not be where that text starts: nothing
        # more of it goes out then.
        mapped = not p.second_answer
        flagged = _first_flagged(verdict.choices[0].detection, ends, p.passed) if mapped else 0
        cut = p.passed if flagged is None else ([p.passed, *ends])[flagged]
        passed_now = flagged if flagged is not None else 0
        p.flagged_sentence = _first_sentence(p, spans, ends) if mapped else p.released_sentences
    else:
        passed_now = len(ends)
    if shown.refusal is not None:
        p.released_sentences += passed_now
        edits.stop(p, cut if cut is not None else p.passed, shown)
        return
    before = p.released_sentences
    p.released_sentences += len(ends)
    if shown.warning is not None and p.warned_sentence is None:
        if cut is not None and cut < p.length:
            edits.warn_before(p, cut, shown.warning.text, before + passed_now)
        else:  # flagged only across released sentences: the warning follows the answer
            edits.warn_after(p, end, shown.warning.text)
    edits.place_verdict(p, end, shown)


def _stop_or_flow(
    state: StreamState, p: Progressive, rt: Runtime, checked: CheckedRequest, reason: str
) -> None:
    """A sentence check could not run (``reason``): a fail-closed route ends the stream with its
    refusal; otherwise the rest flows as it comes, checked whole at the end (a drain: marked
    unavailable there)."""
    p.phase = "flowing"
    if checked.route.fail_policy == "closed" or reason == "draining":
        shown = skip(state, rt, checked.route, checked.decision.name, reason, "a sentence check could not run")
        if shown.refusal is not None:
            edits.stop(p, p.passed, shown)
        else:
            p.unchecked = shown


def _give_up(
    state: StreamState, p: Progressive, rt: Runtime, reason: str, detail: str, *, framed: bool = True
) -> None:
    """The answer cannot be read: the rest goes out as it came, with the "unavailable" verdict
    (or, fail-closed, the refusal) after what was read. ``framed``: the events still frame, so
    they are still read, for a verdict the upstream wrote (dropped: the verdict is the
    gateway's alone); else every later byte goes on unread."""
    checked = state.checked
    if checked is None:
        p.phase = "flowing"
        return
    shown = skip(state, rt, checked.route, checked.decision.name, reason, detail, upstream=True)
    if shown.refusal is not None:
        edits.stop(p, p.passed, shown)
        return
    p.ended = p.gave_up = True
    p.phase = "flowing" if framed else "open"
    p.held_from = None
    # After the last whole event: never inside the event the upstream left open.
    p.edits.append(Edit(p.read, p.read, p.codec.unchecked_events(shown)))
