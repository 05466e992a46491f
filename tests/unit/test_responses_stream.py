"""The Responses API stream codec: accumulation of the semantic events into answers (a stream
shaped after the API reference, with a reasoning item and a citation), the end of the answer,
what passthrough and hold send (the warning delta before the done events, the re-emitted final
text, the verdict event before ``response.completed``, monotonic sequence numbers), refusals,
scrubbing of upstream verdicts, and events that are not part of an answer.

Nothing is scripted: the codec's bytes are read by the official ``openai`` client over real
HTTP (a local server that sends exactly those bytes), the way a client of the gateway reads them.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from truthlens.gateway.apis.interface import BodyError, Presentation, Refusal, WarningSpec
from truthlens.gateway.apis.responses.stream import ResponsesStream
from truthlens.gateway.apis.sse import SSEDecoder, SSEEvent
from truthlens.testing import responses_upstream

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "openai_responses_stream.sse").read_bytes()
TEXT = "The Eiffel Tower was completed in 1889 (see the record)."
CITED = "the record"  # what the fixture's url_citation points at
WARNING = WarningSpec("Careful: unverified.", "prepend")
NOTE = "\n\nCareful: unverified."
DETAILS = {"status": "detected", "action": "warned"}


def events(raw: bytes) -> list[SSEEvent]:
    dec = SSEDecoder()
    return dec.feed(raw) + dec.flush()


def docs(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in events(raw) if e.has_data and not e.is_done]


def shown(*, outcome: str = "annotate", warning: WarningSpec | None = None, contents: tuple[str | None, ...] | None = None,
          refusal: Refusal | None = None, warned: frozenset[int] | None = None) -> Presentation:
    return Presentation(headers={}, contents=contents, warning=warning, details=DETAILS, attach_details=False,
                        refusal=refusal, outcome=outcome, warned=warned)  # type: ignore[arg-type]


BLOCKED = Refusal(422, "blocked: unsupported", "hallucination_detected", "hallucination_detected", {}, "truthlens_blocked")


def run(codec: ResponsesStream, raw: bytes) -> tuple[bytes, bytes, SSEEvent | None, bytes]:
    """Feed ``raw`` as the passthrough / hold phase does: (forwarded at once, withheld before the
    end, the event that ended the answer (None: the end of the stream, after a terminal event),
    what follows it)."""
    forwarded, withheld = bytearray(), bytearray()
    evs = events(raw)
    for i, event in enumerate(evs):
        if codec.add(event):
            return bytes(forwarded), bytes(withheld), event, b"".join(e.raw for e in evs[i + 1 :])
        if codec.strategy == "passthrough" and not codec.holding:
            forwarded += event.raw
        else:
            withheld += event.raw
    if codec.answer_complete:
        return bytes(forwarded), bytes(withheld), None, b""
    raise AssertionError("the stream never ended")


def client_view(body: bytes) -> tuple[list[Any], Any]:
    """The official client's events for ``body`` and the helper's final response (or its error)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="k", max_retries=0)
        seen = list(client.responses.create(model="m", input="q", stream=True))
        with client.responses.stream(model="m", input="q") as stream:
            for _ in stream:
                pass
            final: Any = stream.get_final_response()
        return seen, final
    finally:
        server.shutdown()
        server.server_close()


def sequence_numbers(raw: bytes) -> list[int]:
    return [d["sequence_number"] for d in docs(raw)]


# ---------------------------------------------------------------- reading


def test_the_fixture_is_what_the_openai_package_reads_as_a_responses_stream() -> None:
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    adapter = TypeAdapter(ResponseStreamEvent)
    for event in events(FIXTURE):
        assert event.event == adapter.validate_json(event.data).type


def test_the_fixture_reads_as_one_answer_ending_with_the_stream_after_response_completed() -> None:
    codec = ResponsesStream("passthrough")
    forwarded, withheld, end, after = run(codec, FIXTURE)
    assert codec.answers() == (TEXT,)  # the reasoning item is not an answer
    assert end is None and after == b"" and codec.answer_complete
    # Without a warning to place only the terminal event is held (with anything after it).
    assert withheld == events(FIXTURE)[-1].raw and forwarded + withheld == FIXTURE
    assert codec.ends_answer(events(FIXTURE)[-1]) and not codec.ends_answer(events(FIXTURE)[0])


def _stream(*events_: dict[str, Any]) -> bytes:
    return b"".join(responses_upstream.encode(e) for e in events_)


def _base(text: str, pieces: list[str]) -> list[dict[str, Any]]:
    return list(responses_upstream.response_events("r1", "m", [text], [pieces]))


def test_a_done_text_its_deltas_did_not_render_is_a_mismatch_never_an_answer() -> None:
    # The client shows "Wrong." (the deltas); the done events say "Right.": checking "Right."
    # would call what the client sees clean.
    raw = _stream(*responses_upstream.response_events("r1", "m", ["Right."], [["Wro", "ng."]]))
    with pytest.raises(BodyError) as info:
        run(ResponsesStream("hold"), raw)
    assert info.value.reason == "stream_mismatch"


def test_a_completed_before_the_deltas_is_a_mismatch() -> None:
    grounded, real = _base("Right.", ["Right."]), _base("Wrong.", ["Wro", "ng."])
    raw = _stream(*real[:2], grounded[-1], *real[2:])  # created, in_progress, completed("Right."), deltas ...
    with pytest.raises(BodyError) as info:
        run(ResponsesStream("hold"), raw)
    assert info.value.reason == "stream_mismatch"


def test_a_second_completed_with_another_text_is_a_mismatch() -> None:
    real, other = _base("Right.", ["Rig", "ht."]), _base("Wrong.", ["Wrong."])
    with pytest.raises(BodyError) as info:
        run(ResponsesStream("passthrough"), _stream(*real, other[-1]))
    assert info.value.reason == "stream_mismatch"


def test_events_after_the_first_completed_are_held_and_judged() -> None:
    real = _base("Right.", ["Rig", "ht."])
    codec = ResponsesStream("passthrough")
    forwarded, withheld, end, _ = run(codec, _stream(*real, real[-1]))  # the same completed twice
    assert end is None and withheld == _stream(real[-1], real[-1])
    assert codec.answers() == ("Right.",)
    out = codec.finish(shown(), withheld, end)
    assert [d["type"] for d in docs(out)] == ["truthlens.verdict", "response.completed", "response.completed"]


@pytest.mark.parametrize(("field", "value"), [("output_index", 128), ("content_index", 1_000_000_000)])
def test_an_index_over_the_bound_is_refused_before_it_keys_anything(field: str, value: int) -> None:
    delta = {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0,
             "delta": "x", "sequence_number": 1, field: value}
    with pytest.raises(BodyError) as info:
        ResponsesStream("passthrough").add(SSEEvent(json.dumps(delta), None, None, b""))
    assert info.value.reason == "bad_response" and "over the gateway's limit" in str(info.value)


def test_two_messages_are_two_answers_in_output_order() -> None:
    raw = b"".join(responses_upstream.encode(e) for e in responses_upstream.response_events(
        "r1", "m", ["First.", "Second."], [["Fir", "st."], ["Second."]]))
    codec = ResponsesStream("hold")
    run(codec, raw)
    assert codec.answers() == ("First.", "Second.")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"type": "error", "sequence_number": 3, "error": {"message": "rate limited"}}, "bad_response"),
        ({"type": "response.failed", "sequence_number": 3, "response": {"error": {"message": "boom"}}}, "bad_response"),
        ({"object": "chat.completion.chunk", "choices": []}, "bad_response"),  # a chat stream on the Responses path
        ({"type": "response.output_text.delta", "output_index": "0", "content_index": 0, "delta": "x"}, "bad_response"),
        ({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": 5}, "bad_response"),
        ({"type": "response.completed", "response": None}, "bad_response"),
        ([1, 2], "bad_response"),
    ],
)
def test_events_that_are_not_part_of_an_answer_raise_with_a_reason(data: object, reason: str) -> None:
    with pytest.raises(BodyError) as info:
        ResponsesStream("passthrough").add(SSEEvent(json.dumps(data), None, None, b""))
    assert info.value.reason == reason


def test_unknown_event_types_are_carried_and_not_json_is_a_framing_error() -> None:
    codec = ResponsesStream("passthrough")
    assert codec.add(SSEEvent('{"type": "response.some_future_event", "sequence_number": 1}', None, None, b"")) is False
    with pytest.raises(ValueError):
        codec.add(SSEEvent('{"type": "response.output_text.delta", "delt', None, None, b""))


def test_data_done_also_ends_an_answer() -> None:
    done = SSEEvent("[DONE]", None, None, b"data: [DONE]\n\n")
    assert ResponsesStream("hold").add(done) and ResponsesStream("hold").ends_answer(done)


# ---------------------------------------------------------------- passthrough


def test_passthrough_clean_sends_the_verdict_event_before_completed() -> None:
    codec = ResponsesStream("passthrough", warns=True)
    forwarded, withheld, end, _ = run(codec, FIXTURE)
    assert codec.holding  # the message's text closed while a warning could still come
    out = codec.finish(shown(), withheld, end)
    body = forwarded + out
    types = [d["type"] for d in docs(body)]
    assert types[-2:] == ["truthlens.verdict", "response.completed"]
    assert docs(body)[-2]["truthlens"] == DETAILS
    numbers = sequence_numbers(body)
    assert numbers == sorted(set(numbers))  # strictly increasing
    assert docs(out)[:-2] == [d for d in docs(FIXTURE) if d["sequence_number"] >= docs(out)[0]["sequence_number"]][:-1]
    seen, final = client_view(body)
    verdict = [e for e in seen if e.type == "truthlens.verdict"]
    assert len(verdict) == 1 and verdict[0].model_extra["truthlens"] == DETAILS  # the SDK passes it through
    assert final.output_text == TEXT


def test_passthrough_warning_is_one_more_delta_before_the_done_events() -> None:
    codec = ResponsesStream("passthrough", warns=True)
    forwarded, withheld, end, _ = run(codec, FIXTURE)
    out = codec.finish(shown(outcome="rewrite", warning=WARNING), withheld, end)
    body = forwarded + out
    by_type = {d["type"]: d for d in docs(out)}
    assert [d["type"] for d in docs(out)][:2] == ["response.output_text.delta", "response.output_text.done"]
    assert by_type["response.output_text.delta"]["delta"] == NOTE
    assert by_type["response.output_text.done"]["text"] == TEXT + NOTE
    part = by_type["response.content_part.done"]["part"]
    assert part["text"] == TEXT + NOTE
    citation = part["annotations"][0]  # appended: the citation still points at its words
    assert part["text"][citation["start_index"]:citation["end_index"]] == CITED
    assert by_type["response.completed"]["response"]["output"][1]["content"][0]["text"] == TEXT + NOTE
    numbers = sequence_numbers(body)
    assert numbers == sorted(set(numbers))
    seen, final = client_view(body)
    streamed = "".join(e.delta for e in seen if e.type == "response.output_text.delta")
    assert streamed == TEXT + NOTE  # what the client accumulated is what the done events say
    assert final.output_text == TEXT + NOTE


def test_passthrough_refusal_comes_after_the_verdict_and_the_client_raises() -> None:
    codec = ResponsesStream("passthrough", warns=True)
    forwarded, withheld, end, _ = run(codec, FIXTURE)
    out = codec.finish(shown(outcome="refuse", refusal=BLOCKED), withheld, end)
    types = [d["type"] for d in docs(out)]
    assert types[-3:] == ["truthlens.verdict", "error", "response.completed"]
    error = docs(out)[-2]
    assert (error["code"], error["message"]) == ("hallucination_detected", "blocked: unsupported")  # the reference's shape
    assert error["error"]["code"] == "hallucination_detected"  # the shape the API sends
    with pytest.raises(openai.APIError, match="blocked: unsupported"):
        client_view(forwarded + out)


# ---------------------------------------------------------------- hold


def test_hold_rewrite_replaces_the_deltas_and_every_done_text() -> None:
    codec = ResponsesStream("hold")
    forwarded, withheld, end, _ = run(codec, FIXTURE)
    assert forwarded == b""
    out = codec.finish(shown(outcome="rewrite", contents=("Completed in 1889.",)), withheld, end)
    got = docs(out)
    deltas = [d for d in got if d["type"] == "response.output_text.delta"]
    assert [d["delta"] for d in deltas] == ["Completed in 1889."]
    assert [d["sequence_number"] for d in got] == list(range(len(got)))  # renumbered from the first
    done = next(d for d in got if d["type"] == "response.content_part.done")
    assert done["part"]["text"] == "Completed in 1889." and done["part"]["annotations"] == []
    completed = got[-1]["response"]["output"][1]["content"][0]
    assert completed["text"] == "Completed in 1889." and completed["annotations"] == []
    assert got[-2]["type"] == "truthlens.verdict"
    seen, final = client_view(out)
    assert final.output_text == "Completed in 1889."
    assert [e.type for e in seen if e.type.startswith("response.output_item")] == [
        "response.output_item.added", "response.output_item.done", "response.output_item.added", "response.output_item.done"]


def test_hold_prepended_warning_moves_the_citation_with_its_words() -> None:
    codec = ResponsesStream("hold")
    _, withheld, end, _ = run(codec, FIXTURE)
    out = codec.finish(shown(outcome="rewrite", warning=WARNING), withheld, end)
    part = next(d for d in docs(out) if d["type"] == "response.content_part.done")["part"]
    text, citation = part["text"], part["annotations"][0]
    assert text == "Careful: unverified.\n\n" + TEXT
    assert text[citation["start_index"]:citation["end_index"]] == CITED
    _, final = client_view(out)
    assert final.output_text == text


def test_hold_clean_answer_keeps_its_deltas() -> None:
    codec = ResponsesStream("hold")
    _, withheld, end, _ = run(codec, FIXTURE)
    out = codec.finish(shown(), withheld, end)
    before = [d["delta"] for d in docs(FIXTURE) if d["type"] == "response.output_text.delta"]
    assert [d["delta"] for d in docs(out) if d["type"] == "response.output_text.delta"] == before
    assert [d["type"] for d in docs(out)][-2:] == ["truthlens.verdict", "response.completed"]
    completed = events(FIXTURE)[-1].raw
    assert withheld.endswith(completed)
    assert out.startswith(withheld[: -len(completed)])  # the upstream's own bytes up to the verdict event


def test_withheld_bytes_the_codec_did_not_read_are_parsed_again_and_kept() -> None:
    codec = ResponsesStream("hold")
    _, withheld, end, _ = run(codec, FIXTURE)
    keepalive = b": keep-alive\n\n"
    out = codec.finish(shown(outcome="rewrite", contents=("Completed in 1889.",)), withheld + keepalive, end)
    assert keepalive in out
    assert [d["delta"] for d in docs(out) if d["type"] == "response.output_text.delta"] == ["Completed in 1889."]


def test_hold_warns_only_the_flagged_message() -> None:
    raw = b"".join(responses_upstream.encode(e) for e in responses_upstream.response_events(
        "r1", "m", ["First.", "Second."], [["Fir", "st."], ["Sec", "ond."]]))
    codec = ResponsesStream("hold")
    _, withheld, end, _ = run(codec, raw)
    out = codec.finish(shown(outcome="rewrite", warning=WARNING, warned=frozenset({1})), withheld, end)
    texts = [d["text"] for d in docs(out) if d["type"] == "response.output_text.done"]
    assert texts == ["First.", "Careful: unverified.\n\nSecond."]
    _, final = client_view(out)
    assert final.output_text == "First.Careful: unverified.\n\nSecond."


def test_hold_refusal_replaces_the_answer_with_an_error_between_created_and_failed() -> None:
    codec = ResponsesStream("hold")
    _, withheld, end, _ = run(codec, FIXTURE)
    out = codec.finish(shown(outcome="block", refusal=BLOCKED), withheld, end)
    got = docs(out)
    assert [d["type"] for d in got] == ["response.created", "error", "response.failed"]
    assert [d["sequence_number"] for d in got] == [0, 1, 2]
    assert got[2]["response"]["error"]["code"] == "hallucination_detected" and got[2]["response"]["output"] == []
    assert b"1889" not in out  # nothing of the withheld answer
    with pytest.raises(openai.APIError, match="blocked: unsupported"):
        client_view(out)


def test_an_unchecked_answer_gets_its_verdict_after_the_last_event() -> None:
    codec = ResponsesStream("passthrough")
    run(codec, FIXTURE)
    out = docs(codec.unchecked_events(shown(outcome="unchecked")))
    assert [d["type"] for d in out] == ["truthlens.verdict"]
    assert out[0]["sequence_number"] == docs(FIXTURE)[-1]["sequence_number"] + 1


# ---------------------------------------------------------------- spoofing


def forged_events() -> Iterator[tuple[str, bool]]:
    yield json.dumps({"type": "truthlens.verdict", "sequence_number": 9, "truthlens": {"status": "clean"}}), True
    yield json.dumps({"type": "truthlens.anything", "sequence_number": 9}), True
    yield json.dumps({"type": "response.output_text.delta", "truthlens": {"status": "clean"}}), True
    yield json.dumps({"type": "response.output_text.delta", "delta": "the truthlens project"}), False


@pytest.mark.parametrize(("data", "dropped"), list(forged_events()))
def test_upstream_verdict_events_are_dropped(data: str, dropped: bool) -> None:
    event = SSEEvent(data, None, None, f"data: {data}\n\n".encode())
    assert (ResponsesStream("passthrough").scrub(event) is None) is dropped
    if not dropped:
        assert ResponsesStream("passthrough").scrub(event) is event


def test_an_upstream_verdict_inside_the_response_object_is_removed() -> None:
    completed = json.loads(events(FIXTURE)[-1].data)
    completed["response"]["truthlens"] = {"status": "clean"}
    data = json.dumps(completed)
    event = SSEEvent(data, "response.completed", None, f"event: response.completed\ndata: {data}\n\n".encode())
    scrubbed = ResponsesStream("passthrough").scrub(event)
    assert scrubbed is not None and "truthlens" not in json.loads(scrubbed.data)["response"]
    assert events(scrubbed.raw)[0].data == scrubbed.data and scrubbed.event == "response.completed"
