"""Streams an upstream cannot game: sizes it controls are bounded, a Responses stream is judged on
what the client renders, and a fail-closed route never hands out a held stream it did not check.

Real: Envoy (the shipped ``envoy.yaml``: an 8 MiB buffer), gRPC ext_proc, the processor
(``truthlens serve``) with the shipped detector in ONNX Runtime, the ``openai`` SDK. Scripted:
only the upstream, which sends the exact stream bytes each test writes (``raw_body``): chunks
with huge choice indexes, Responses streams whose done / completed events disagree with their
deltas or come twice, and streams larger than the route's limit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

import openai
import pytest
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision, parse_sse

from truthlens.testing import responses_upstream

pytestmark = pytest.mark.envoy

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MIB = 1024 * 1024
WARNING = "⚠️ Warning"
# The processor's resident memory after a hostile stream: the shipped detector and the runtime
# take a few hundred MiB; one chunk with choice index 1e9 used to grow it to 24 GB.
RSS_LIMIT_KIB = 2 * 1024 * 1024

DECISIONS = [
    decision("block", route_header="block", path_prefix="/v1/", actions=["header", "block"]),
    decision("closed_hold", route_header="closed-hold", path_prefix="/v1/", streaming="hold", fail_policy="closed",
             actions=["header", "body"]),
    decision("closed", route_header="closed", path_prefix="/v1/", fail_policy="closed", actions=["header", "body"]),
    decision("warn", priority=10, path_prefix="/v1/", actions=["header", "body"], streaming="passthrough"),
]


def _chunk(index: int, content: str, finish: str | None = None) -> bytes:
    doc = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": index, "delta": {"content": content}, "logprobs": None, "finish_reason": finish}]}
    return f"data: {json.dumps(doc)}\n\n".encode()


def _chat_stream(index: int) -> str:
    """A grounded answer on choice 0, then one chunk for choice ``index``."""
    return (_chunk(0, GROUNDED) + _chunk(index, " x") + _chunk(0, "", "stop") + b"data: [DONE]\n\n").decode()


def _events(texts: Sequence[str], pieces: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    return responses_upstream.response_events("resp_1", "test-model", list(texts), [list(p) for p in pieces])


def _encode(events: Sequence[dict[str, Any]]) -> str:
    """The events as the upstream sends them, numbered in the order given."""
    return b"".join(responses_upstream.encode({**e, "sequence_number": n}) for n, e in enumerate(events)).decode()


def _words(text: str) -> list[str]:
    return [w + " " for w in text.split(" ")[:-1]] + [text.split(" ")[-1]]


HALLUCINATED_EVENTS = _events([HALLUCINATED], [_words(HALLUCINATED)])
GROUNDED_EVENTS = _events([GROUNDED], [_words(GROUNDED)])
# The deltas render the hallucinated answer; every done event and response.completed say the grounded one.
SWAPPED_DONE = [*HALLUCINATED_EVENTS[:4], *HALLUCINATED_EVENTS[4:-4], *GROUNDED_EVENTS[-4:]]
# A grounded response.completed first, then the hallucinated deltas and their own completed.
COMPLETED_FIRST = [*HALLUCINATED_EVENTS[:2], GROUNDED_EVENTS[-1], *HALLUCINATED_EVENTS[2:]]
# The real answer, then a second completed that says the grounded text.
SECOND_COMPLETED = [*HALLUCINATED_EVENTS, GROUNDED_EVENTS[-1]]
# The real answer with its completed sent twice (the same text).
REPEATED_COMPLETED = [*HALLUCINATED_EVENTS, HALLUCINATED_EVENTS[-1]]


def _big_responses_stream(total_bytes: int) -> str:
    """A valid Responses stream of about ``total_bytes``: the text comes five times (deltas, three
    done events, response.completed), so it is a fifth of that, in deltas of 64 KiB."""
    sentence = "The Eiffel Tower is in Paris. "
    text = sentence * (total_bytes // 5 // len(sentence))
    step = 64 * 1024
    return _encode(_events([text], [[text[i : i + step] for i in range(0, len(text), step)]]))


SCRIPT = [
    {"name": f"index-{n}", "match": {"user": f"index-{n}"}, "reply": {"raw_body": _chat_stream(n)}}
    for n in (1_000_000_000, 100_000)
] + [
    {"name": "swapped-done", "match": {"user": "swapped-done"}, "reply": {"raw_body": _encode(SWAPPED_DONE)}},
    {"name": "completed-first", "match": {"user": "completed-first"}, "reply": {"raw_body": _encode(COMPLETED_FIRST)}},
    {"name": "second-completed", "match": {"user": "second-completed"}, "reply": {"raw_body": _encode(SECOND_COMPLETED)}},
    {"name": "repeated-completed", "match": {"user": "repeated-completed"},
     "reply": {"raw_body": _encode(REPEATED_COMPLETED)}},
    {"name": "grounded", "match": {"user": "grounded"}, "reply": {"content": GROUNDED}},
]
BIG = {"twelve": 12 * MIB, "sixty": 60 * MIB}


@pytest.fixture
def streams(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    yield stack


@pytest.fixture
def big_streams(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    yield stack
    stack.set_script(SCRIPT)  # a big script is not kept around for later suites


def _big_script(stack: Stack, name: str) -> None:
    """One rule answering ``name`` with a stream of ``BIG[name]`` bytes (one at a time: the
    upstream takes scripts up to 64 MiB)."""
    stack.set_script([{"name": name, "match": {"user": name}, "reply": {"raw_body": _big_responses_stream(BIG[name])}},
                      {"name": "grounded", "match": {"user": "grounded"}, "reply": {"content": GROUNDED}}])


def _processor_rss_kib(stack: Stack) -> int:
    """The resident memory of the processor's process group (``VmRSS`` of each, in KiB)."""
    leader = stack._children["processor"].proc.pid
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii") as f:
                pgid = int(f.read().rsplit(")", 1)[1].split()[2])
            if pgid != leader:
                continue
            with open(f"/proc/{name}/status", encoding="ascii") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration, ValueError):
            continue  # the process went away meanwhile
    return total


def _responses(stack: Stack, question: str, route: str | None = None, *, timeout_s: float = 60) -> RawResponse:
    body = {"model": "test-model", "input": question, "truthlens_context": CONTEXT, "stream": True}
    return stack.raw("POST", RESPONSES, body, {"x-test-route": route} if route else {}, timeout_s=timeout_s)


def _verdicts(body: bytes) -> list[dict[str, Any]]:
    return [e["truthlens"] for e in parse_sse(body) if isinstance(e, dict) and e.get("type") == "truthlens.verdict"]


# ---------------------------------------------------------------- sizes the upstream controls


@pytest.mark.parametrize("index", [1_000_000_000, 100_000])
@pytest.mark.parametrize("route", [None, "block"])
def test_a_huge_choice_index_is_unavailable_and_the_worker_keeps_serving(
    streams: Stack, index: int, route: str | None
) -> None:
    question = f"index-{index}"
    headers = {"x-test-route": route} if route else {}
    resp = streams.raw("POST", CHAT, chat_body(question, context=CONTEXT, stream=True), headers, timeout_s=60)
    assert resp.status == 200
    events = parse_sse(resp.body)
    (verdict,) = [e["truthlens"] for e in events if isinstance(e, dict) and "truthlens" in e]
    assert (verdict["status"], verdict["reason"]) == ("unavailable", "bad_response")
    assert "over the gateway's limit of 127" in verdict["message"]
    # The upstream's chunks arrive unchanged (nothing was sized by the index), then [DONE].
    reference = parse_sse(streams.upstream_raw("POST", CHAT, chat_body(question, stream=True)).body)
    assert [e for e in events if not (isinstance(e, dict) and "truthlens" in e)] == reference
    assert len(resp.body) < 4096
    if route == "block":
        assert resp.headers["x-truthlens-detected"] == "unavailable"
        assert resp.headers["x-truthlens-reason"] == "bad_response"
    assert _processor_rss_kib(streams) < RSS_LIMIT_KIB
    # The same worker answers the next exchange at once.
    after = streams.raw("POST", CHAT, chat_body("grounded", context=CONTEXT), {"x-test-route": "block"}, timeout_s=30)
    assert after.status == 200 and after.headers["x-truthlens-detected"] == "false"


@pytest.mark.parametrize("index", [1_000_000_000, 100_000])
def test_a_huge_choice_index_on_a_fail_closed_route_is_refused(streams: Stack, index: int) -> None:
    resp = streams.raw("POST", CHAT, chat_body(f"index-{index}", context=CONTEXT, stream=True),
                       {"x-test-route": "closed-hold"}, timeout_s=60)
    (error,) = parse_sse(resp.body)  # an explicit error, nothing of the unchecked answer
    assert error["error"]["code"] == "bad_response"
    assert resp.headers["x-truthlens-reason"] == "bad_response"
    assert _processor_rss_kib(streams) < RSS_LIMIT_KIB


# ---------------------------------------------------------------- Responses: what the client renders


def test_deltas_that_differ_from_the_done_text_are_unavailable_never_clean(streams: Stack) -> None:
    resp = _responses(streams, "swapped-done", "block")
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] == "stream_mismatch"
    (verdict,) = _verdicts(resp.body)
    assert (verdict["status"], verdict["reason"]) == ("unavailable", "stream_mismatch")


def test_deltas_that_differ_from_the_done_text_are_refused_on_a_fail_closed_route(streams: Stack) -> None:
    resp = _responses(streams, "swapped-done", "closed-hold")
    assert resp.headers["x-truthlens-reason"] == "stream_mismatch"
    errors = [e for e in parse_sse(resp.body) if e.get("type") == "error"]
    assert [e["code"] for e in errors] == ["stream_mismatch"]
    assert b"Speer" not in resp.body and b"Eiffel" not in resp.body  # nothing of the unchecked answer


def test_a_grounded_completed_before_the_real_deltas_is_not_clean(streams: Stack) -> None:
    resp = _responses(streams, "completed-first", "block")
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] == "stream_mismatch"
    # The openai SDK over the same route: the hallucinated deltas come with no clean verdict.
    client = openai.OpenAI(base_url=streams.base_url, api_key="k", max_retries=0, timeout=60,
                           default_headers={"x-test-route": "block"})
    seen = list(client.responses.create(model="test-model", input="completed-first", stream=True,
                                        extra_body={"truthlens_context": CONTEXT}))
    verdicts = [e.model_extra["truthlens"] for e in seen if e.type == "truthlens.verdict"]
    assert [v["status"] for v in verdicts] == ["unavailable"]


def test_a_second_completed_that_changes_the_text_is_not_clean(streams: Stack) -> None:
    resp = _responses(streams, "second-completed")
    (verdict,) = _verdicts(resp.body)
    assert (verdict["status"], verdict["reason"]) == ("unavailable", "stream_mismatch")


def test_a_repeated_completed_is_held_and_carries_the_warning(streams: Stack) -> None:
    # The answer is warned; the second response.completed is held with the first and patched
    # like it, so the SDK's final response (the last completed) keeps the warning.
    client = openai.OpenAI(base_url=streams.base_url, api_key="k", max_retries=0, timeout=60)
    with client.responses.stream(model="test-model", input="repeated-completed",
                                 extra_body={"truthlens_context": CONTEXT}) as stream:
        seen = list(stream)
        final = stream.get_final_response()
    verdicts = [e.model_extra["truthlens"] for e in seen if e.type == "truthlens.verdict"]
    assert [v["status"] for v in verdicts] == ["detected"]
    completed = [e for e in seen if e.type == "response.completed"]
    assert len(completed) == 2 and all(WARNING in e.response.output_text for e in completed)
    assert WARNING in final.output_text
    assert [e.type for e in seen].index("truthlens.verdict") < [e.type for e in seen].index("response.completed")


# ---------------------------------------------------------------- big Responses streams


def test_a_passthrough_responses_stream_over_the_limit_arrives_whole_marked_too_large(big_streams: Stack) -> None:
    _big_script(big_streams, "twelve")
    resp = _responses(big_streams, "twelve", timeout_s=120)
    assert resp.status == 200
    reference = big_streams.upstream_raw("POST", RESPONSES, {"model": "test-model", "input": "twelve", "stream": True})
    (verdict,) = _verdicts(resp.body)
    assert (verdict["status"], verdict["reason"]) == ("unavailable", "too_large")
    upstream_events = [e for e in parse_sse(resp.body) if e.get("type") != "truthlens.verdict"]
    assert upstream_events == parse_sse(reference.body)  # every event, unchanged
    after = big_streams.raw("POST", CHAT, chat_body("grounded", context=CONTEXT), {"x-test-route": "block"})
    assert after.status == 200 and after.headers["x-truthlens-detected"] == "false"


def test_a_held_stream_over_envoys_buffer_on_a_fail_closed_route_is_an_explicit_error(big_streams: Stack) -> None:
    _big_script(big_streams, "sixty")
    resp = _responses(big_streams, "sixty", "closed-hold", timeout_s=120)
    assert resp.status == 502
    assert resp.headers["x-truthlens-reason"] == "too_large"
    assert resp.json()["error"]["code"] == "too_large"
    assert b"Eiffel" not in resp.body  # nothing of the unchecked answer
