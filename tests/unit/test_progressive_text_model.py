"""Progressive release reads what the client is shown, ends where the held route ends, and
costs what its schedule says (the fourth adversarial round's cases PR22, PR23, PR24, PR28,
PR29, PR7, PA, PR26, PR25), beside the held and passthrough routes that judge the same streams.

Envoy's way over a real gRPC channel (every chunk written first, the replies read after: see
``test_progressive_phase.py``). Real: the gRPC server, the phases, the shipped detector in ONNX
Runtime. Scripted: the upstream's stream bytes.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from harness import chat_body, decision, parse_sse
from prometheus_client import CollectorRegistry
from test_stream import (
    processor_channel,
    released,
    request_body,
    request_headers,
    response_body,
    response_headers,
    split,
)

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis.sentences import split as split_sentences
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.exchange.phases import response_progressive
from truthlens.gateway.server.processor import METHOD_PATH
from truthlens.testing.responses_upstream import encode, response_events

pytestmark = pytest.mark.asyncio(loop_scope="session")

S1 = "The Eiffel Tower is a wrought-iron lattice tower in Paris."
S2 = "It was completed in 1889 and designed by the company of Gustave Eiffel."
HALLU = "The Eiffel Tower was completed in 1925 and designed by Albert Speer."
CONTEXT = [f"{S1} {S2}"]
WRONG = (b"1925", b"Speer")  # what HALLU says that the context does not

BLOCK = {"actions": ["header", "block"]}
DECISIONS = [
    decision("pblock", route_header="pblock", streaming="progressive", path_prefix="/v1/", **BLOCK),
    decision("pclosed", route_header="pclosed", streaming="progressive", fail_policy="closed", path_prefix="/v1/",
             **BLOCK),
    decision("pwarn", route_header="pwarn", streaming="progressive", actions=["header", "body"]),
    decision("hold", route_header="hold", streaming="hold", path_prefix="/v1/", **BLOCK),
    decision("closed", route_header="closed", streaming="hold", fail_policy="closed", path_prefix="/v1/", **BLOCK),
    decision("pass", route_header="pass", streaming="passthrough", path_prefix="/v1/", actions=["header"]),
    decision("passclosed", route_header="passclosed", streaming="passthrough", fail_policy="closed",
             path_prefix="/v1/", actions=["header"]),
    decision("ptight", route_header="ptight", streaming="progressive", budgets={"detection_ms": 400, "total_ms": 400},
             **BLOCK),
    decision("ptightclosed", route_header="ptightclosed", streaming="progressive", fail_policy="closed",
             budgets={"detection_ms": 400, "total_ms": 400}, **BLOCK),
]
HELD = ("hold", "closed")  # Envoy buffers these: the whole body in one message
REGISTRY = CollectorRegistry()


@pytest.fixture(scope="module")
async def channel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[grpc.aio.Channel]:
    async with processor_channel(tmp_path_factory.mktemp("progressive-text"), DECISIONS, Telemetry(registry=REGISTRY)) as ch:
        yield ch


async def exchange(channel: grpc.aio.Channel, route: str, upstream: bytes, *, path: str = "/v1/chat/completions",
                   size: int = 53, spans: bool = False, context: list[str] | None = None) -> bytes:
    """What the client gets of ``upstream`` on ``route``: cut into chunks of ``size`` bytes (a
    held route: one buffered message), every chunk written before any reply is read."""
    chunks = [upstream] if route in HELD else split(upstream, size)
    call = channel.stream_stream(METHOD_PATH, request_serializer=pb.ProcessingRequest.SerializeToString,
                                 response_deserializer=pb.ProcessingResponse.FromString)()
    question = "When was it completed?"
    passages = context if context is not None else CONTEXT
    body = (chat_body(question, context=passages, stream=True) if path.endswith("completions") else
            {"model": "m", "input": question, "truthlens_context": passages, "stream": True})
    extra = {"x-truthlens-include-spans": "true"} if spans else {}
    messages = [request_headers(path=path, route=route, **extra), request_body(body),
                response_headers(200, "text/event-stream")]
    messages += [response_body(c, end_of_stream=i == len(chunks) - 1) for i, c in enumerate(chunks)]
    for msg in messages:
        await call.write(msg)
    await call.done_writing()
    replies = [reply async for reply in call]
    assert len(replies) == 3 + len(chunks)
    return released(replies[3:], chunks)


# -- the upstream's streams ---------------------------------------------------------------------


def words(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


def chunk(delta: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                   "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}).encode() + b"\n\n"


END = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n' + b"data: [DONE]\n\n"


def chat_of(text: str, field: str = "content", role: bool = True) -> bytes:
    head = chunk({"role": "assistant", field: ""}) if role else b""
    return head + b"".join(chunk({field: w}) for w in words(text))


def responses_of(text: str, *, start: int = 0) -> list[dict[str, Any]]:
    pieces = words(text)
    return [{**e, "sequence_number": e["sequence_number"] + start}
            for e in response_events("resp_1", "m", [text], [pieces])]


def refusal_responses(text: str) -> bytes:
    """A Responses stream whose one message has one part, a ``refusal``."""
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    created = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    part = {"type": "refusal", "refusal": text}
    done_item = {**item, "status": "completed", "content": [part]}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": created},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", **where, "part": {"type": "refusal", "refusal": ""}},
        *({"type": "response.refusal.delta", **where, "delta": w} for w in words(text)),
        {"type": "response.refusal.done", **where, "refusal": text},
        {"type": "response.content_part.done", **where, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.completed", "response": {**created, "status": "completed", "output": [done_item]}},
    ]
    return b"".join(encode({**e, "sequence_number": n}) for n, e in enumerate(events))


# -- reading what the client got ------------------------------------------------------------------


def verdicts(out: bytes) -> list[dict[str, Any]]:
    return [e["truthlens"] for e in parse_sse(out) if isinstance(e, dict) and "truthlens" in e]


def delta_text(out: bytes, field: str = "content") -> str:
    return "".join((c.get("delta") or {}).get(field) or "" for e in parse_sse(out) if isinstance(e, dict)
                   for c in e.get("choices") or [])


def refused(out: bytes) -> bool:
    last = parse_sse(out)[-1]
    return isinstance(last, dict) and ("error" in last or last.get("type") == "response.failed")


# -- PR22, PR23: a chat answer's refusal is text the client is shown ----------------------------------


@pytest.mark.parametrize("route", ["pblock", "pclosed", "hold", "closed"])
async def test_a_refusal_only_chat_answer_is_checked_and_blocked_on_every_block_route(
    channel: grpc.aio.Channel, route: str
) -> None:
    out = await exchange(channel, route, chat_of(f"{S1} {S2} {HALLU}", "refusal") + END)
    assert not any(w in out for w in WRONG)
    assert refused(out)
    assert [v["status"] for v in verdicts(out)] in ([], ["detected"])  # a held block sends the error alone
    if route.startswith("p"):
        assert delta_text(out, "refusal") == f"{S1} {S2}"  # the sentences that passed, as the client reads them
        assert verdicts(out)[0]["progressive"]["released_sentences"] == 2


@pytest.mark.parametrize("route", ["pblock", "pclosed", "hold", "closed"])
async def test_refusal_deltas_beside_content_deltas_are_read(channel: grpc.aio.Channel, route: str) -> None:
    upstream = chunk({"role": "assistant", "content": ""})
    for w in words(f"{S1} {S2} {HALLU}"):
        wrong = any(x in w for x in ("1925", "Albert", "Speer."))
        upstream += chunk({"content": None, "refusal": w} if wrong else {"content": w})
    out = await exchange(channel, route, upstream + END)
    assert not any(w in out for w in WRONG)
    assert refused(out)
    assert S1 not in delta_text(out, "refusal")


@pytest.mark.parametrize("year", ["1900", "1950"])
async def test_refusal_text_then_content_text_never_releases_a_wrong_refusal_sentence(
    channel: grpc.aio.Channel, year: str
) -> None:
    # Found by the progressive fuzzer (tests/unit/test_fuzz_progressive.py): the refusal came
    # first, then content; the whole answer's text puts the content first, so its spans do not
    # index the refusal text released so far.
    wrong = f"The Eiffel Tower was completed in {year} and designed by Albert Speer."
    upstream = (chunk({"role": "assistant", "content": ""})
                + chunk({"refusal": f"{wrong} {wrong} It was designed by the company of Gustave Eiffel"})
                + chunk({"content": f". {S1}"}) + END)
    for size in (len(upstream), 40):
        out = await exchange(channel, "pblock", upstream, size=size)
        assert year.encode() not in out and b"Speer" not in out
        assert refused(out)


async def test_a_grounded_refusal_only_answer_is_released_whole(channel: grpc.aio.Channel) -> None:
    text = f"{S1} {S2}"
    out = await exchange(channel, "pclosed", chat_of(text, "refusal") + END)
    assert delta_text(out, "refusal") == text
    (verdict,) = verdicts(out)
    assert verdict["status"] == "clean" and verdict["progressive"]["released_sentences"] == 2
    assert parse_sse(out)[-1] == "[DONE]"


async def test_a_content_list_of_parts_is_released_by_its_text(channel: grpc.aio.Channel) -> None:
    upstream = chunk({"role": "assistant", "content": ""})
    upstream += b"".join(chunk({"content": [{"type": "text", "text": w}]}) for w in words(f"{S1} {HALLU} {S2}"))
    out = await exchange(channel, "pblock", upstream + END, size=31)
    assert not any(w in out for w in WRONG)
    assert refused(out)
    released_text = ""
    for event in parse_sse(out):
        for choice in event.get("choices") or [] if isinstance(event, dict) else []:
            content = (choice.get("delta") or {}).get("content")
            released_text += "\n".join(p["text"] for p in content) if isinstance(content, list) else content or ""
    assert released_text == S1


# -- PR24: a Responses message whose only part is a refusal has no text, on every route ----------------


@pytest.mark.parametrize("route", ["pblock", "pclosed", "hold", "closed", "pass"])
async def test_a_refusal_only_responses_stream_is_skipped_no_text_on_every_route(
    channel: grpc.aio.Channel, route: str
) -> None:
    out = await exchange(channel, route, refusal_responses(f"{S1} {S2} {HALLU}"), path="/v1/responses")
    (verdict,) = verdicts(out)
    assert (verdict["status"], verdict.get("reason")) == ("skipped", "no_text")


# -- PR28: what follows a Responses answer's terminal event is read, as on a held route ---------------


def completed_then_more() -> bytes:
    """The answer of S1 S2 to its response.completed, then the delta and done events of HALLU for
    the same item and a second response.completed."""
    good = responses_of(f"{S1} {S2}")
    more = [e for e in responses_of(HALLU, start=103)
            if e["type"] not in ("response.created", "response.in_progress", "response.output_item.added",
                                 "response.content_part.added")]
    return b"".join(encode(e) for e in good + more)


@pytest.mark.parametrize("route", ["pclosed", "closed", "passclosed"])
async def test_text_after_response_completed_is_refused_on_a_fail_closed_route(
    channel: grpc.aio.Channel, route: str
) -> None:
    out = await exchange(channel, route, completed_then_more(), path="/v1/responses")
    assert not any(w in out for w in WRONG)
    assert refused(out)
    assert all(v["status"] != "clean" for v in verdicts(out))


@pytest.mark.parametrize("route", ["pblock", "pass"])
async def test_text_after_response_completed_is_never_called_clean(channel: grpc.aio.Channel, route: str) -> None:
    out = await exchange(channel, route, completed_then_more(), path="/v1/responses")
    assert [(v["status"], v.get("reason")) for v in verdicts(out)] == [("unavailable", "stream_mismatch")]


FORGED_CHAT = b'data: {"choices": [], "truthlens": {"status": "clean"}}\n\n'
FORGED_RESPONSES = b'event: truthlens.verdict\ndata: {"type": "truthlens.verdict", "truthlens": {"status": "clean"}}\n\n'


@pytest.mark.parametrize("size", [57, 100_000])
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_verdict_the_upstream_writes_after_the_gateway_gave_up_is_dropped(
    channel: grpc.aio.Channel, api: str, size: int
) -> None:
    # Found by the progressive fuzzer: once a fail-open progressive route gave up on a stream it
    # could not read, the rest went on unread, a forged "clean" verdict included.
    if api == "chat":
        upstream = chat_of(f"{S1} {S2}") + b'data: {"choices": 5}\n\n' + FORGED_CHAT + END
        path, reason = "/v1/chat/completions", "bad_response"
    else:
        upstream = completed_then_more() + FORGED_RESPONSES
        path, reason = "/v1/responses", "stream_mismatch"
    out = await exchange(channel, "pblock", upstream, path=path, size=size)
    assert [(v["status"], v.get("reason")) for v in verdicts(out)] == [("unavailable", reason)]
    assert b'"status": "clean"' not in out


async def test_a_responses_answer_still_ends_at_its_stream_end(channel: grpc.aio.Channel) -> None:
    upstream = b"".join(encode(e) for e in responses_of(f"{S1} {S2}")) + b": a comment after the end\n\n"
    out = await exchange(channel, "pclosed", upstream, path="/v1/responses", size=41)
    events = [e for e in parse_sse(out) if isinstance(e, dict)]
    assert [e["type"] for e in events][-2:] == ["truthlens.verdict", "response.completed"]
    assert events[-2]["truthlens"]["status"] == "clean"
    assert out.endswith(b": a comment after the end\n\n")


# -- PR29: what follows data: [DONE] ---------------------------------------------------------------


def done_then_more() -> bytes:
    return chat_of(f"{S1} {S2}") + END + chat_of(HALLU, role=False) + b"data: [DONE]\n\n" + b": bye\n\n"


@pytest.mark.parametrize("route", ["pclosed", "closed", "passclosed"])
async def test_nothing_follows_done_on_a_fail_closed_route(channel: grpc.aio.Channel, route: str) -> None:
    out = await exchange(channel, route, done_then_more())
    assert out.endswith(b"data: [DONE]\n\n") and out.count(b"[DONE]") == 1
    assert not any(w in out for w in WRONG)
    assert [v["status"] for v in verdicts(out)] == ["clean"]


@pytest.mark.parametrize("route", ["pblock", "hold", "pass"])
async def test_no_text_follows_done_on_a_fail_open_route(channel: grpc.aio.Channel, route: str) -> None:
    out = await exchange(channel, route, done_then_more())
    assert not any(w in out for w in WRONG)
    assert out.count(b"[DONE]") == 1
    if route != "hold":  # a held stream is re-written whole; others keep the upstream's comment
        assert out.endswith(b"data: [DONE]\n\n: bye\n\n")


# -- PR7: one budget, and a bound on sentence checks --------------------------------------------------


async def test_a_flood_of_tiny_sentences_costs_a_bounded_number_of_checks(
    channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[int] = []
    real = response_progressive._detect

    async def counted(state: Any, checked: Any, rt: Any, prefix: str) -> Any:
        checks.append(len(prefix))
        return await real(state, checked, rt, prefix)

    monkeypatch.setattr(response_progressive, "_detect", counted)
    answer = " ".join(["Yes!"] * 300)
    upstream = chat_of(answer) + END
    out = await exchange(channel, "pblock", upstream, size=len(chunk({"content": "Yes! "})))
    assert delta_text(out) == answer
    (verdict,) = verdicts(out)
    assert verdict["progressive"]["released_sentences"] == 300
    # Sentence checks are batched by their cost: each reads the context once, so their number
    # follows the answer's length over the context's, not its 300 sentences.
    assert 1 <= len(checks) <= 30
    assert max(checks) <= response_progressive.WINDOW_CHARS + len(answer) // 2


@pytest.mark.parametrize(("route", "closed"), [("ptight", False), ("ptightclosed", True)])
async def test_the_sentence_checks_share_one_total_budget(
    channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch, route: str, closed: bool
) -> None:
    # Every sentence checked alone (no batching): each check is well under the route's
    # total_ms of 400, all of them together are not.
    from truthlens.gateway.exchange.phases import progressive_schedule

    monkeypatch.setattr(progressive_schedule, "CHECK_BUDGET", 1e9)
    answer = " ".join([S1, S2] * 20)
    out = await exchange(channel, route, chat_of(answer) + END, size=40)
    (verdict,) = verdicts(out)
    assert verdict["status"] == "unavailable"
    # A fail-closed route refuses at the sentence check; a fail-open one lets the rest flow,
    # and the end's check has nothing left of the budget either.
    reasons = [verdict["reason"]] if "reason" in verdict else [c["reason"] for c in verdict["choices"]]
    assert reasons == ["budget_exhausted"]
    if closed:
        assert refused(out) and len(delta_text(out)) < len(answer)
    else:
        assert delta_text(out) == answer and parse_sse(out)[-1] == "[DONE]"


# -- PA: a complete progressive stream is one audit line, no error ------------------------------------


async def test_a_complete_progressive_stream_is_audited_once(
    channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    def resets() -> float:
        return REGISTRY.get_sample_value("truthlens_errors_total", {"reason": "upstream_reset"}) or 0.0

    before = resets()
    with caplog.at_level(logging.INFO, logger="truthlens.audit"):
        out = await exchange(channel, "pblock", chat_of(f"{S1} {S2}") + END)
    assert [v["status"] for v in verdicts(out)] == ["clean"]
    lines = [r.getMessage() for r in caplog.records if r.name == "truthlens.audit"]
    assert len(lines) == 1 and "verdict=clean" in lines[0], lines
    assert resets() == before


# -- PR26, PR25: span offsets and flagged_sentence index the client's text -----------------------------


async def test_spans_on_a_progressive_warning_route_index_the_clients_text(channel: grpc.aio.Channel) -> None:
    out = await exchange(channel, "pwarn", chat_of(f"{S1} {S2} {HALLU} {S1}") + END, spans=True)
    text = delta_text(out)
    assert "⚠️" in text
    (verdict,) = verdicts(out)
    spans = [s for c in verdict["choices"] for s in c.get("spans", [])]
    assert spans and verdict["status"] == "detected"
    for span in spans:
        assert text[span["start"] : span["end"]] == span["text"]
    # The warning goes before HALLU, the answer's third sentence (number 2 from 0), and says so.
    assert text.index("⚠️") < text.index("1925")
    assert verdict["progressive"]["warned_before_sentence"] == 2


PR25_CONTEXT = ["The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It was completed "
                "in 1889 and designed by the company of Gustave Eiffel. It is 330 metres tall and was the tallest "
                "man-made structure until 1930."]
PR25 = "The tower was completed in 1889. That was its second completion. The first was in 1850."


@pytest.mark.parametrize("route", ["pblock", "pwarn"])
@pytest.mark.parametrize(("answer", "context"), [(f"{S1} {S2} {HALLU} {S2}", None), (PR25, PR25_CONTEXT)])
async def test_flagged_sentence_is_the_first_sentence_a_span_lies_in(
    channel: grpc.aio.Channel, route: str, answer: str, context: list[str] | None
) -> None:
    out = await exchange(channel, route, chat_of(answer) + END, spans=True, context=context)
    (verdict,) = verdicts(out)
    spans = [s for c in verdict["choices"] for s in c.get("spans", [])]
    assert verdict["status"] == "detected" and spans
    first = min(s["start"] for s in spans)
    text = delta_text(out)
    if verdict.get("warning_position") == "inline":  # offsets index the client's text, the warning inside it
        note = text.index("\n\n⚠️")
        note_end = text.index("\n\n", note + 2) + 2
        assert text[:note] + text[note_end:] == answer
        first -= (note_end - note) if first >= note_end else 0
    pieces = split_sentences(answer)
    ends = [sum(map(len, pieces[: i + 1])) for i in range(len(pieces))]
    assert verdict["progressive"]["flagged_sentence"] == next(i for i, end in enumerate(ends) if first < end)


# -- issue 50: how the request was read is on every checked answer, a sentence's block included ------


async def test_an_answer_blocked_at_a_sentence_says_how_the_request_was_read(
    channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="truthlens.audit"):
        out = await exchange(channel, "pblock", chat_of(f"{S1} {S2} {HALLU}") + END)
    assert refused(out) and not any(w in out for w in WRONG)
    (verdict,) = verdicts(out)
    assert verdict["status"] == "detected" and verdict["task"] == "question"
    (line,) = [r.getMessage() for r in caplog.records if r.name == "truthlens.audit"]
    assert "verdict=detected" in line and "task=question" in line and "context_source=field" in line
