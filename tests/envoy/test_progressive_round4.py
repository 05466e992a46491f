"""Round 4's progressive cases through the real Envoy: a chat answer whose text comes as refusal
deltas (PR22) and a Responses stream that goes on after its ``response.completed`` (PR28), on
progressive block routes beside the held route that judges the same bytes; with the ``openai``
SDK where it shows what a client is left with.

Real: Envoy (the shipped ``envoy.yaml``), gRPC ext_proc, the processor with the shipped detector
in ONNX Runtime. Scripted: the upstream (``truthlens.testing``: exact bytes with ``raw_body``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from harness import Stack, decision
from round3 import ask_chat, ask_responses, chunk, client_events, error_codes, statuses, verdicts

from truthlens.testing import responses_upstream

pytestmark = pytest.mark.envoy

S1 = "The Eiffel Tower is a wrought-iron lattice tower in Paris."
S2 = "It was completed in 1889 and designed by the company of Gustave Eiffel."
HALLU = "The Eiffel Tower was completed in 1925 and designed by Albert Speer."
CONTEXT = (f"{S1} {S2}",)
WRONG = (b"1925", b"Speer")

DECISIONS = [
    decision(name, route_header=name, path_prefix="/v1/", actions=["header", "block"], **extra)
    for name, extra in [("pblock", {"streaming": "progressive"}),
                        ("pclosed", {"streaming": "progressive", "fail_policy": "closed"}),
                        ("closed", {"streaming": "hold", "fail_policy": "closed"})]
]


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


def _refusal_stream() -> str:
    body = chunk(role="assistant", refusal="") + b"".join(chunk(refusal=w) for w in _words(f"{S1} {S2} {HALLU}"))
    return (body + chunk(finish="stop") + b"data: [DONE]\n\n").decode()


def _responses_then_more() -> str:
    """S1 S2 to its response.completed, then HALLU's deltas and done events for the same item and
    a second response.completed."""
    good = responses_upstream.response_events("resp_1", "m", [f"{S1} {S2}"], [_words(f"{S1} {S2}")])
    more = [{**e, "sequence_number": e["sequence_number"] + 103}
            for e in responses_upstream.response_events("resp_1", "m", [HALLU], [_words(HALLU)])
            if e["type"] not in ("response.created", "response.in_progress", "response.output_item.added",
                                 "response.content_part.added")]
    return b"".join(responses_upstream.encode(e) for e in good + more).decode()


SCRIPT = [
    {"name": "refusal", "match": {"user": "refusal-words"}, "reply": {"raw_body": _refusal_stream()}},
    {"name": "after-completed", "match": {"user": "after-completed"}, "reply": {"raw_body": _responses_then_more()}},
]


@pytest.fixture
def round4(stack: Stack) -> Stack:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    return stack


def _refusal_text(body: bytes) -> str:
    out = []
    for _, data in client_events(body):
        try:
            doc: Any = json.loads(data)
        except ValueError:
            continue
        for choice in doc.get("choices") or [] if isinstance(doc, dict) else []:
            out.append((choice.get("delta") or {}).get("refusal") or "")
    return "".join(out)


@pytest.mark.parametrize("route", ["pblock", "pclosed", "closed"])
def test_pr22_a_refusal_only_stream_is_blocked_on_progressive_routes_as_held(round4: Stack, route: str) -> None:
    resp = ask_chat(round4, "refusal-words?", route, context=CONTEXT)
    assert resp.status == 200
    assert not any(w in resp.body for w in WRONG)
    assert error_codes(resp.body) == ["hallucination_detected"]
    if route != "closed":  # the sentences that passed went out, then the verdict and the error
        assert _refusal_text(resp.body) == f"{S1} {S2}"
        assert statuses(verdicts(resp.body)) == ["detected"]


@pytest.mark.parametrize("route", ["pclosed", "closed"])
def test_pr28_text_after_response_completed_is_refused_on_fail_closed_routes(round4: Stack, route: str) -> None:
    resp = ask_responses(round4, "after-completed?", route, context=CONTEXT)
    assert not any(w in resp.body for w in WRONG)
    assert error_codes(resp.body) == ["stream_mismatch"]
    assert "clean" not in statuses(verdicts(resp.body))


def test_pr28_the_sdk_is_never_left_with_text_called_clean(round4: Stack) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{round4.ports.listener}/v1", api_key="test", max_retries=0)
    found: list[Any] = []
    deltas: list[str] = []
    with client.responses.create(model="m", input="after-completed?", stream=True,
                                 extra_headers={"x-test-route": "pblock"},
                                 extra_body={"truthlens_context": list(CONTEXT)}) as events:
        for event in events:
            if event.type == "truthlens.verdict":
                found.append(getattr(event, "truthlens", None) or event.model_extra.get("truthlens"))
            elif event.type == "response.output_text.delta":
                deltas.append(event.delta)
    # Fail-open: every byte goes on, but the verdict says what the gateway could not vouch for.
    assert [(v["status"], v.get("reason")) for v in found] == [("unavailable", "stream_mismatch")]
    assert "".join(deltas).startswith(f"{S1} {S2}")
