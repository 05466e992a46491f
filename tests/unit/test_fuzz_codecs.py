"""Property-based fuzzing (``hypothesis``) of what reads an upstream's bytes: the SSE decoder, the
chat and Responses stream codecs, and the JSON body path, fed the hostile events of
``tests/fuzzing.py``. Invariants:

- the decoder gives back every byte it was fed, whatever the split points, and dispatches what a
  browser's ``EventSource`` dispatches (BOM, ``retry``, CR / LF mixes);
- a codec reads an event or refuses it with a reason (``BodyError`` / ``ValueError``), never with
  another exception (``TypeError``, ``RecursionError``, ...), and never lets a forged verdict out;
- the JSON helpers never reach an interpreter limit, and cut a key out of a document of any
  depth as decoding and removing it would;
- parsing time grows linearly with the bytes (a size-doubling ratio, not a wall-clock bound).

Real: the codecs. Generated: every upstream byte.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable

import pytest
from fuzzing import (
    chat_chunks,
    escaped,
    event_text,
    forged_in,
    framed,
    names_verdict,
    responses_events,
    splits,
    whatwg_events,
)
from hypothesis import given
from hypothesis import strategies as st

from truthlens.gateway.apis import forged, json_doc
from truthlens.gateway.apis.chat.stream import ChatStream
from truthlens.gateway.apis.interface import BodyError
from truthlens.gateway.apis.responses.stream import ResponsesStream
from truthlens.gateway.apis.sse import SSEDecoder, SSEError, SSEEvent

STREAMS = st.lists(event_text(chat_chunks()), min_size=1, max_size=5).flatmap(framed)
RESPONSES = st.lists(event_text(responses_events()), min_size=1, max_size=5).flatmap(framed)


def _decode(pieces: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = [e for piece in pieces for e in decoder.feed(piece)]
    return events + decoder.flush()


# -- the SSE decoder --------------------------------------------------------------------------------

@given(st.one_of(STREAMS, RESPONSES).flatmap(lambda body: st.tuples(st.just(body), splits(body))))
def test_the_decoder_gives_back_every_byte_and_dispatches_what_a_browser_does(case: tuple[bytes, list[bytes]]) -> None:
    body, pieces = case
    try:
        events = _decode(pieces)
    except SSEError:
        return  # unframeable (e.g. invalid UTF-8 from a cut): the phase releases the bytes as they came
    assert b"".join(e.raw for e in events) == body
    assert events == _decode([body])  # wherever the upstream's chunks were cut
    dispatched = [(e.event, e.data) for e in events if e.has_data]
    assert dispatched == whatwg_events(body)


# -- the stream codecs ------------------------------------------------------------------------------

def _read_stream(codec: ChatStream | ResponsesStream, body: bytes) -> None:
    """Every event through the codec as the phase does: scrub, then add; only a reasoned refusal."""
    try:
        events = _decode([body])
    except SSEError:
        return
    for event in events:
        kept = codec.scrub(event)
        if kept is None:
            continue
        assert not forged_in(kept.event, kept.data), kept.raw[:200]
        assert b"".join(e.raw for e in _decode([kept.raw])) == kept.raw  # a re-encoded event stays one event
        try:
            codec.add(kept)
        except (BodyError, ValueError):
            return  # the phase gives up on the stream with this reason
    codec.answers()


@given(STREAMS, st.sampled_from(["passthrough", "hold"]))
def test_the_chat_codec_reads_or_refuses_any_stream_and_never_passes_a_forged_verdict(body: bytes, strategy: str) -> None:
    _read_stream(ChatStream(strategy, warns=True), body)  # type: ignore[arg-type]


@given(RESPONSES, st.sampled_from(["passthrough", "hold"]))
def test_the_responses_codec_reads_or_refuses_any_stream_and_never_passes_a_forged_verdict(
    body: bytes, strategy: str
) -> None:
    _read_stream(ResponsesStream(strategy, warns=True), body)  # type: ignore[arg-type]


# -- the JSON body path -----------------------------------------------------------------------------

_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
                       lambda inner: st.one_of(st.lists(inner, max_size=3),
                                               st.dictionaries(st.sampled_from(["a", "b", "__K__"]), inner, max_size=3)),
                       max_leaves=12)


@st.composite
def _documents(draw: st.DrawFn) -> str:
    """A JSON object with the verdict's name as some keys (escaped or not), wrapped ``depth`` deep."""
    doc = draw(st.dictionaries(st.sampled_from(["id", "choices", "__K__", "x"]), _VALUES, min_size=1, max_size=4))
    text = json.dumps(doc)
    while '"__K__"' in text:
        text = text.replace('"__K__"', '"' + draw(escaped()) + '"', 1)
    depth = draw(st.integers(0, 300))
    if depth:
        text = text[:-1] + (", " if len(text) > 2 else "") + '"deep": ' + "[" * depth + "{}" + "]" * depth + "}"
    return text


@given(_documents())
def test_the_json_helpers_never_reach_a_recursion_limit_and_remove_every_verdict_field(text: str) -> None:
    try:
        decoded = json_doc.loads(text)
    except json_doc.TooDeep:
        decoded = None
    scrubbed = forged.without_details(text.encode())
    after = scrubbed.decode() if scrubbed is not None else text
    if decoded is not None:
        assert (scrubbed is None) == (not json_doc.has_key(decoded, "truthlens"))
        # The token scan (used past the depth limit) cuts what decoding and removing would.
        cut = json_doc.without_key_text(text, "truthlens")
        assert json.loads(cut if cut is not None else text) == json_doc.without_key(decoded, "truthlens")
    assert not names_verdict(after)  # no reader finds the name in what the client gets


def _depth(text: str) -> int:
    """Reference nesting depth (outside strings), a plain loop."""
    depth = deepest = 0
    in_string = escape = False
    for ch in text:
        if in_string:
            escape, in_string = (False, True) if escape else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


@given(_documents())
def test_the_depth_bound_agrees_with_a_reference_count(text: str) -> None:
    assert json_doc.within_depth(text) == (_depth(text) <= json_doc.MAX_DEPTH)


# -- linear time ------------------------------------------------------------------------------------

def _best_time(fn: Callable[[], object], repeats: int = 5) -> float:
    """The least CPU time (this process's, so other processes on a busy machine do not count),
    with the cyclic garbage collector paused: a collection walks every object the whole test
    session holds, so its cost grows with the suite, not with the bytes parsed here."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.process_time()
            fn()
            best = min(best, time.process_time() - start)
    finally:
        gc.enable()
    return best


def _feed_in_chunks(body: bytes, size: int) -> Callable[[], object]:
    return lambda: _decode([body[i : i + size] for i in range(0, len(body), size)])


# case → (size in bytes, the work for a size). C-speed paths are sized past the CPU caches (below
# ~1 MB the larger size alone misses them); the token scan runs in Python and is sized smaller.
LINEAR_CASES: dict[str, tuple[int, Callable[[int], Callable[[], object]]]] = {
    # one event of n bytes arriving in 512-byte chunks (a rescan of the buffer per chunk is quadratic)
    "one big event in small chunks": (1_000_000, lambda n: _feed_in_chunks(b"data: " + b"x" * n + b"\n\n", 512)),
    "the same with CR line ends": (1_000_000, lambda n: _feed_in_chunks(b"data: " + b"x" * n + b"\r\r", 512)),
    "many tiny events": (200_000, lambda n: _feed_in_chunks(b"data: {}\n\n" * (n // 10), 4096)),
    "a value nested n deep": (1_000_000, lambda n: lambda: json_doc.within_depth("[" * (n // 2) + "]" * (n // 2))),
    "a key cut from a document n deep": (40_000, lambda n: lambda: json_doc.without_key_text(
        '{"truthlens":1,"x":' + "[" * (n // 2) + "]" * (n // 2) + "}", "truthlens")),
}


@pytest.mark.parametrize("case", list(LINEAR_CASES))
def test_parsing_time_grows_linearly_with_the_bytes(case: str) -> None:
    """Four times the bytes take about four times the time; a quadratic path takes sixteen. The
    bound (8) leaves room for a busy machine, and the least CPU time of five runs at each size
    is compared, so a slow moment does not decide it."""
    n, make = LINEAR_CASES[case]
    small, large = _best_time(make(n)), _best_time(make(4 * n))
    assert large / small < 8.0, f"{case}: {small * 1e3:.2f} ms for {n} bytes, {large * 1e3:.2f} ms for {4 * n}"
