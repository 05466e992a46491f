"""SSE framing: the decoder against recorded streams split at every byte, CRLF / CR / LF
line ends, comments, fields, size cap, and the encoder round trip. Nothing is scripted: these
are pure functions over bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truthlens.gateway.apis.sse import DONE_EVENT, SSEDecoder, SSEError, encode_event

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def decode_all(body: bytes, step: int | None = None) -> list:
    dec = SSEDecoder()
    events = []
    if step is None:
        events += dec.feed(body)
    else:
        for i in range(0, len(body), step):
            events += dec.feed(body[i : i + step])
    events += dec.flush()
    return events


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.sse")))
def test_recorded_streams_frame_identically_at_any_split(name: str) -> None:
    body = (FIXTURES / name).read_bytes()
    whole = decode_all(body)
    # Every byte comes back exactly once, in order: a pass-through loses nothing.
    assert b"".join(e.raw for e in whole) == body
    # A chat stream ends with data: [DONE], a Responses API stream with its terminal event.
    assert whole[-1].is_done or json.loads(whole[-1].data)["type"] == "response.completed"
    data_events = [e for e in whole if e.has_data and not e.is_done]
    assert data_events and all(isinstance(json.loads(e.data), dict) for e in data_events)
    for step in (1, 2, 3, 7, 64):
        split = decode_all(body, step)
        assert [(e.data, e.raw) for e in split] == [(e.data, e.raw) for e in whole], step


def test_events_are_released_only_when_complete() -> None:
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a"') == []
    assert dec.feed(b": 1}\n") == []
    events = dec.feed(b"\ndata: x")
    assert [e.data for e in events] == ['{"a": 1}']
    assert dec.pending_bytes == len(b"data: x")
    assert [e.data for e in dec.feed(b"\n\n")] == ["x"]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_endings(eol: bytes) -> None:
    body = b"data: one" + eol + b"data: two" + eol + eol + b"data: [DONE]" + eol + eol
    events = decode_all(body, 1)
    assert [e.data for e in events] == ["one\ntwo", "[DONE]"]
    assert events[1].is_done


def test_crlf_is_not_read_as_two_line_ends() -> None:
    # "\r\n" alone ends a line, not an event.
    events = SSEDecoder().feed(b"data: a\r\ndata: b\r\n\r\n")
    assert [e.data for e in events] == ["a\nb"]


def test_cr_at_chunk_end_waits_for_the_next_byte() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\r\n\r") == []  # could be CR CR or CR LF CR LF
    events = dec.feed(b"\ndata: b\r\n\r\n")
    assert [e.data for e in events] == ["a", "b"]
    assert events[0].raw == b"data: a\r\n\r\n"


def test_fields_comments_and_unknown_fields() -> None:
    body = b": comment\nevent: delta\nid: 7\nretry: 1500\nfoo: bar\ndata:no-space\ndata:  two spaces\n\n"
    (event,) = decode_all(body)
    assert event.event == "delta" and event.id == "7" and event.retry == 1500
    assert event.data == "no-space\n two spaces"


def test_comment_only_block_is_released_without_data() -> None:
    events = decode_all(b": keep-alive\n\ndata: x\n\n")
    assert [(e.has_data, e.data) for e in events] == [(False, ""), (True, "x")]
    assert not events[0].is_done


def test_flush_returns_an_unterminated_last_event() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: [DONE]\n") == []
    (event,) = dec.flush()
    assert event.is_done and event.raw == b"data: [DONE]\n"
    assert dec.flush() == []


def test_size_cap_on_a_pending_event_and_drain_keeps_the_bytes() -> None:
    dec = SSEDecoder(max_event_bytes=64)
    assert [e.data for e in dec.feed(b"data: ok\n\n")] == ["ok"]
    with pytest.raises(SSEError) as info:
        dec.feed(b"data: " + b"x" * 100)
    assert info.value.reason == "sse_framing"
    assert dec.drain() == b"data: " + b"x" * 100
    assert dec.pending_bytes == 0


def test_many_small_events_in_one_chunk_are_not_capped() -> None:
    body = b"data: y\n\n" * 1000
    assert len(SSEDecoder(max_event_bytes=64).feed(body)) == 1000


def test_invalid_utf8_is_an_error() -> None:
    with pytest.raises(SSEError):
        SSEDecoder().feed(b"data: \xff\xfe\n\n")


def test_encoder_round_trip() -> None:
    raw = encode_event('{"a": 1}\nsecond line', event="message", id="3")
    assert raw == b'event: message\nid: 3\ndata: {"a": 1}\ndata: second line\n\n'
    (event,) = SSEDecoder().feed(raw)
    assert (event.data, event.event, event.id, event.raw) == ('{"a": 1}\nsecond line', "message", "3", raw)
    assert SSEDecoder().feed(DONE_EVENT)[0].is_done
    with pytest.raises(ValueError):
        encode_event("x", event="two\nlines")
