"""A bounded number of the fuzzer's hostile streams (``tests/fuzzing.py``) end to end: a hallucinated
chat stream with generated events mixed in (escaped verdicts, deep values, odd field types, BOMs,
CR / LF mixes), sent by the upstream and read through Envoy as a browser reads it.

- a passthrough fail-open route: no verdict but the gateway's reaches the client, and every byte
  the upstream sent is released (but the events that name the verdict, which are dropped);
- a held fail-closed route: the answer goes out only checked (one verdict, the headers' own), or
  not at all (the refusal; no text of it).

Real: Envoy (the shipped ``envoy.yaml``), gRPC ext_proc, the processor with the shipped detector in
ONNX Runtime. Scripted: the upstream, which sends each generated body byte for byte (``raw_body``).
"""

from __future__ import annotations

import pytest
from fuzzing import assert_released, chat_chunks, event_text, framed
from harness import RawResponse, Stack
from hypothesis import given, settings
from hypothesis import strategies as st
from round3 import DECISIONS, HALLUCINATED, ask_chat, chat_stream, error_codes, statuses, text_of, verdicts

pytestmark = pytest.mark.envoy

# Through Envoy each example is a whole exchange with a check: a few, whatever the profile says.
E2E_EXAMPLES = min(settings().max_examples, 10)
_BASE = [text + "\n\n" for text in chat_stream(HALLUCINATED).decode().split("\n\n") if text]


@st.composite
def hostile_streams(draw: st.DrawFn) -> bytes:
    """The hallucinated stream with up to three generated events before its ``[DONE]``."""
    events = list(_BASE)
    for extra in draw(st.lists(event_text(chat_chunks()), max_size=3)):
        events.insert(draw(st.integers(1, len(events) - 1)), extra)
    return draw(framed(events))


@pytest.fixture(scope="module")
def fuzz_stack(stack: Stack) -> Stack:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    return stack


def _send(stack: Stack, body: bytes, route: str | None) -> RawResponse:
    stack.set_script([{"name": "fuzz", "match": {"user": "fuzz"}, "reply": {"raw_body": body.decode("utf-8")}}])
    resp = ask_chat(stack, "fuzz?", route)
    assert resp.status == 200
    return resp


@settings(max_examples=E2E_EXAMPLES)
@given(body=hostile_streams())
def test_a_passthrough_route_releases_every_byte_and_no_verdict_but_its_own(fuzz_stack: Stack, body: bytes) -> None:
    out = _send(fuzz_stack, body, None).body
    assert_released(body, out)


@settings(max_examples=E2E_EXAMPLES)
@given(body=hostile_streams())
def test_a_held_fail_closed_route_releases_an_answer_only_checked(fuzz_stack: Stack, body: bytes) -> None:
    held = _send(fuzz_stack, body, "closed-hold")
    found = statuses(verdicts(held.body))
    assert "FORGED" not in found
    detected = held.headers["x-truthlens-detected"]
    if detected in ("true", "false"):
        assert found == [{"true": "detected", "false": "clean"}[detected]]
    elif detected == "unavailable":
        assert text_of(held.body) == "" and error_codes(held.body)  # refused: none of it went out
    else:
        assert detected == "skipped" and text_of(held.body).strip() == ""
