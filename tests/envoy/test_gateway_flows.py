"""Grounded vs hallucinated answers, plain and streaming, under each action, as the official
``openai`` client sees them through a real Envoy and the real processor.

Scripted: only the upstream LLM (``src/truthlens/testing/upstream.py``). The detector is the shipped
trained model in ONNX Runtime, fed answers it judges with a wide margin (``tests/shipped_inputs.py``).
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED, WRONG_FACTS
from harness import Stack, chat_body

pytestmark = pytest.mark.envoy


def ask(stack: Stack, question: str, *, route: str | None = None, stream: bool = False, **kw: Any) -> Any:
    headers = {"x-test-route": route} if route else {}
    headers.update(kw.pop("extra_headers", {}))
    return stack.client.chat.completions.with_raw_response.create(
        model="test-model",
        messages=[{"role": "user", "content": question}],
        extra_body={"truthlens_context": CONTEXT},
        extra_headers=headers,
        stream=stream,
        **kw,
    )


def truthlens_headers(raw: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in raw.headers.items() if k.lower().startswith("x-truthlens-")}


def read_stream(raw: Any) -> tuple[list[str], dict[str, Any] | None]:
    """Content per choice and the verdict (the ``truthlens`` object of the last chunk)."""
    texts: dict[int, str] = {}
    verdict = None
    for chunk in raw.parse():
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
        extra = chunk.model_extra or {}
        if "truthlens" in extra:
            verdict = extra["truthlens"]
    return [texts[i] for i in sorted(texts)], verdict


def test_grounded_answer_is_clean_and_unchanged(gateway: Stack) -> None:
    raw = ask(gateway, "grounded: when was the Eiffel Tower completed?")
    headers = truthlens_headers(raw)
    assert headers["x-truthlens-detected"] == "false"
    assert headers["x-truthlens-enabled"] == "true"
    assert headers["x-truthlens-mode"] == "lightweight"
    assert float(headers["x-truthlens-score"]) < 0.5
    assert int(headers["x-truthlens-latency-ms"]) >= 0
    assert raw.parse().choices[0].message.content == GROUNDED
    # The extension field never reaches the upstream.
    call = gateway.upstream_calls()[-1]
    assert "truthlens_context" not in call["params"]


def test_hallucinated_answer_is_flagged_and_warned(gateway: Stack) -> None:
    raw = ask(gateway, "hallucinated: when was the Eiffel Tower completed?", n=2)
    headers = truthlens_headers(raw)
    assert headers["x-truthlens-detected"] == "true"
    assert float(headers["x-truthlens-score"]) > 0.5
    contents = [c.message.content for c in raw.parse().choices]
    assert len(contents) == 2
    for content in contents:
        assert content.startswith("⚠️ Warning") and content.endswith(HALLUCINATED)


def test_verdicts_are_counted(gateway: Stack) -> None:
    labels = {"decision": "chat", "mode": "lightweight"}
    before = {d: gateway.metric("truthlens_detections_total", detected=d, **labels) for d in ("true", "false")}
    ask(gateway, "hallucinated?")
    ask(gateway, "grounded?")
    ask(gateway, "grounded?")
    after = {d: gateway.metric("truthlens_detections_total", detected=d, **labels) for d in ("true", "false")}
    assert after["true"] - before["true"] == 1
    assert after["false"] - before["false"] == 2


def test_spans_come_back_when_asked(gateway: Stack) -> None:
    raw = ask(gateway, "hallucinated?", extra_headers={"x-truthlens-include-spans": "true"})
    details = raw.parse().model_extra["truthlens"]
    spans = details["choices"][0]["spans"]
    assert spans, "a detected answer comes with the spans that made it so"
    for span in spans:  # each flagged span lies inside one of the answer's wrong facts
        assert any(span["text"].strip() in fact for fact in WRONG_FACTS), span
    assert details["status"] == "detected"


def test_header_action_leaves_the_body_alone(gateway: Stack) -> None:
    raw = ask(gateway, "hallucinated?", route="header")
    assert truthlens_headers(raw)["x-truthlens-detected"] == "true"
    assert raw.parse().choices[0].message.content == HALLUCINATED


def test_no_action_changes_nothing_visible(gateway: Stack) -> None:
    raw = ask(gateway, "hallucinated?", route="none")
    assert truthlens_headers(raw) == {}
    assert raw.parse().choices[0].message.content == HALLUCINATED


def test_block_action_refuses_a_hallucinated_answer(gateway: Stack) -> None:
    with pytest.raises(openai.UnprocessableEntityError) as info:
        ask(gateway, "hallucinated?", route="block")
    assert info.value.status_code == 422
    assert info.value.code == "hallucination_detected"
    assert info.value.response.headers["x-truthlens-detected"] == "true"
    # A grounded answer on the same route goes through.
    assert ask(gateway, "grounded?", route="block").parse().choices[0].message.content == GROUNDED


def test_streaming_passthrough_appends_warning_and_verdict(gateway: Stack) -> None:
    raw = ask(gateway, "hallucinated?", stream=True)
    assert truthlens_headers(raw) == {"x-truthlens-enabled": "true", "x-truthlens-mode": "lightweight"}
    (text,), verdict = read_stream(raw)
    assert text.startswith(HALLUCINATED) and "⚠️ Warning" in text[len(HALLUCINATED) :]
    assert verdict is not None and verdict["status"] == "detected" and verdict["score"] > 0.5

    raw = ask(gateway, "grounded?", stream=True)
    (text,), verdict = read_stream(raw)
    assert text == GROUNDED
    assert verdict is not None and verdict["status"] == "clean"


def test_streaming_hold_sends_the_warned_answer_rechunked(gateway: Stack) -> None:
    (text,), verdict = read_stream(ask(gateway, "hallucinated?", route="hold", stream=True))
    assert text.startswith("⚠️ Warning") and text.endswith(HALLUCINATED)
    assert verdict is not None and verdict["status"] == "detected"


def test_the_verdict_says_where_the_warning_went(gateway: Stack) -> None:
    """The route says prepend: JSON and a held stream prepend; a passthrough stream's content is
    out before the verdict, so its warning can only be appended, and its verdict chunk says so."""
    spans = {"x-truthlens-include-spans": "true"}
    details = ask(gateway, "hallucinated?", extra_headers=spans).parse().model_extra["truthlens"]
    assert details["warning_position"] == "prepend"
    (text,), verdict = read_stream(ask(gateway, "hallucinated?", route="hold", stream=True))
    assert text.startswith("⚠️ Warning") and verdict is not None and verdict["warning_position"] == "prepend"
    (text,), verdict = read_stream(ask(gateway, "hallucinated?", stream=True))
    assert text.startswith(HALLUCINATED) and verdict is not None and verdict["warning_position"] == "append"
    (text,), verdict = read_stream(ask(gateway, "grounded?", stream=True))
    assert verdict is not None and "warning_position" not in verdict  # no warning, no position


@pytest.mark.parametrize("route", [None, "hold"])
def test_streaming_checks_every_choice(gateway: Stack, route: str | None) -> None:
    texts, verdict = read_stream(ask(gateway, "hallucinated?", route=route, stream=True, n=3))
    assert len(texts) == 3
    assert all(HALLUCINATED in t and "⚠️ Warning" in t for t in texts)
    assert verdict is not None and [c["index"] for c in verdict["choices"]] == [0, 1, 2]


def test_streaming_block_ends_with_an_error_event(gateway: Stack) -> None:
    raw = ask(gateway, "hallucinated?", route="block", stream=True)
    with pytest.raises(openai.APIError) as info:
        read_stream(raw)
    assert "blocked" in str(info.value.message)
    # Nothing of the withheld answer was released before the error.
    body = gateway.raw("POST", "/v1/chat/completions", chat_body("hallucinated?", context=CONTEXT, stream=True),
                       {"x-test-route": "block"}).body
    assert b"Speer" not in body and b"hallucination_detected" in body  # a word of the wrong fact


def test_disabled_route_is_byte_identical_to_the_upstream(gateway: Stack) -> None:
    through = gateway.raw("GET", "/v1/models")
    direct = gateway.upstream_raw("GET", "/v1/models")
    assert through.status == direct.status == 200
    assert through.body == direct.body
    assert not any(k.startswith("x-truthlens") for k in through.headers)


def test_disabled_decision_passes_the_answer_untouched(gateway: Stack) -> None:
    raw = ask(gateway, "hallucinated?", route="off")
    assert truthlens_headers(raw) == {}
    assert raw.parse().choices[0].message.content == HALLUCINATED
