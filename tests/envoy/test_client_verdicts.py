"""``truthlens.client_verdicts.VerdictRecorder`` with the official ``openai`` client (whichever
version is installed, on its own ``httpx``): every answer's verdict is recorded in order, with
its spans, for a JSON chat completion, a chat stream (whose verdict only its last chunk carries)
and a Responses stream (its ``truthlens.verdict`` event); the requests reach the upstream as sent,
plus the spans header. Real: Envoy, gRPC ext_proc, the processor with the shipped detector.
Scripted: the upstream."""

from __future__ import annotations

import pytest
from harness import Stack
from shipped_inputs import CONTEXT, HALLUCINATED, QUESTION, WRONG_FACTS

from truthlens.client_verdicts import SPANS_HEADER, VerdictRecorder

pytestmark = pytest.mark.envoy


def test_every_answers_verdict_is_recorded_streamed_or_not(stack: Stack) -> None:
    openai = pytest.importorskip("openai")
    assert stack.write_config(stack.config_yaml()) in ("applied", "unchanged")
    stack.set_script([{"name": "wrong", "match": {"any": QUESTION}, "reply": {"content": HALLUCINATED}}])
    recorder = VerdictRecorder()
    client = openai.OpenAI(base_url=stack.base_url, api_key="unused", max_retries=0, http_client=recorder.client())
    messages = [{"role": "user", "content": QUESTION}]
    extra = {"truthlens_context": [CONTEXT]}
    answer = client.chat.completions.create(model="m", messages=messages, extra_body=extra).choices[0].message.content
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
        model="m", messages=messages, extra_body=extra, stream=True) if chunk.choices)
    events = list(client.responses.create(model="m", input=QUESTION, extra_body=extra, stream=True))
    assert events
    json_verdict, chat_stream, responses_stream = recorder.verdicts
    assert json_verdict.headers["x-truthlens-detected"] == "true" and json_verdict.detected == "true"
    assert any(f in answer[s["start"]:s["end"]] for s in json_verdict.spans for f in WRONG_FACTS)
    assert "x-truthlens-detected" not in chat_stream.headers  # a passthrough stream's verdict comes last
    assert chat_stream.complete and chat_stream.detected == "true"
    assert any(f in streamed[s["start"]:s["end"]] for s in chat_stream.spans for f in WRONG_FACTS)
    assert responses_stream.detected == "true" and responses_stream.url.endswith("/v1/responses")
    # Each request asked for the spans (the one header the recorder adds).
    assert all(call["headers"].get(SPANS_HEADER) == "true" for call in stack.upstream_calls()[-3:])
