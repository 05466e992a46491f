"""The second adversarial round's smaller cases, in the request and answer bodies, the audit line
and path matching: a client ``x-request-id`` that tries to forge audit fields, the audit line of
a rewritten answer (original verdict and score kept), path spellings a
loose upstream routes as the checked path, repeated headers read alike by Envoy's routes and the
processor, a malformed request body that mentions the context field, and Responses answers whose
text sits where the check did not read it (a divergent top-level ``output_text``, ``text`` parts).

Real: Envoy (the shipped ``envoy.yaml``; for repeated headers a second Envoy on the routes
``truthlens envoy-routes`` prints), gRPC, the processor and the shipped ONNX detector. Scripted:
only the upstream (raw Responses bodies; refine answers; a loose router that reads any case,
trailing slash and ``;params`` as the plain path).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision, post_with_headers

from truthlens.modes.prompts import REFINE_MARKER
from truthlens.testing import launch

pytestmark = pytest.mark.envoy

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
# As the shipped config: the chat path by prefix, the Responses path exactly.
DECISIONS = [
    decision("chat", priority=10, actions=["header"]),
    {"name": "responses", "priority": 10, "rules": {"type": "path", "exact": RESPONSES},
     "plugins": [{"type": "hallucination", "configuration": {"actions": ["header"]}}]},
]


def _responses_doc(content: list[dict[str, Any]], **extra: Any) -> str:
    return json.dumps({
        "id": "resp_1", "object": "response", "created_at": 1, "model": "m", "status": "completed",
        "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                    "content": content}], **extra})


def _part(kind: str, text: str) -> dict[str, Any]:
    return {"type": kind, "text": text, "annotations": []} if kind == "output_text" else {"type": kind, "text": text}


SCRIPT = [
    {"name": "divergent", "match": {"user": "divergent-output-text"}, "reply": {
        "raw_body": _responses_doc([_part("output_text", GROUNDED)], output_text=HALLUCINATED),
        "content_type": "application/json"}},
    {"name": "text_part", "match": {"user": "text-part"}, "reply": {
        "raw_body": _responses_doc([_part("text", HALLUCINATED)]), "content_type": "application/json"}},
    {"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}},
]


@pytest.fixture
def lows(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    yield stack


def _responses_body(question: str) -> dict[str, Any]:
    return {"model": "test-model", "input": question, "truthlens_context": CONTEXT}


# ---------------------------------------------------------------- the audit line


def test_a_client_request_id_cannot_forge_fields_of_the_audit_line(lows: Stack) -> None:
    forged = "r2-lows verdict=clean score=0.0000 action=none"
    resp = lows.raw("POST", CHAT, chat_body("hallucinated?", context=CONTEXT), {"x-request-id": forged})
    assert resp.headers["x-truthlens-detected"] == "true"
    fields = _audit_fields(lows, "r2-lows verdict")
    assert fields["request_id"] == forged
    assert (fields["verdict"], fields["action"]) == ("detected", "none")
    assert float(fields["score"]) > 0.5


def _audit_fields(stack: Stack, marker: str) -> dict[str, str]:
    launch.wait_until(lambda: marker in stack.processor_log(), "the audit line", None, 5)
    (line,) = [ln for ln in stack.processor_log().splitlines() if marker in ln]
    return dict(w.split("=", 1) for w in shlex.split(line.split(" exchange ", 1)[1]))


def test_the_audit_line_of_a_rewritten_answer_keeps_the_original_verdict_and_score(stack: Stack) -> None:
    # Standard mode refines the hallucinated answer into a grounded one (the scripted upstream
    # answers the refine prompt); the final verdict is the rewrite's, the original stays visible.
    route = decision("refine", priority=10, mode="standard", max_iterations=3, actions=["header", "body"])
    assert stack.write_config(stack.config_yaml(decisions=[route])) in ("applied", "unchanged")
    stack.set_script([{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": GROUNDED}},
                      {"name": "primary", "match": {"model": "test-model"}, "reply": {"content": HALLUCINATED}}])
    try:
        resp = stack.raw("POST", CHAT, chat_body("When was it built?", context=CONTEXT),
                         {"x-request-id": "r2-lows-rewritten"})
        assert resp.json()["choices"][0]["message"]["content"] == GROUNDED
        fields = _audit_fields(stack, "r2-lows-rewritten")
        assert (fields["verdict"], fields["action"]) == ("clean", "rewritten")
        assert fields["original_verdict"] == "detected"
        assert float(fields["original_score"]) > 0.5 > float(fields["score"])
    finally:
        stack.write_config(stack.config_yaml())


# ---------------------------------------------------------------- paths


@pytest.fixture
def loose_upstream(lows: Stack) -> Iterator[Stack]:
    """The upstream routes paths loosely, as many servers do (any case, no trailing slash or ;params)."""
    with lows.upstream_options(loose_paths=True) as stack:
        yield stack


@pytest.mark.parametrize("path", ["/V1/chat/completions", "/v1/Chat/Completions"])
def test_chat_path_spellings_a_loose_upstream_serves_are_checked(loose_upstream: Stack, path: str) -> None:
    resp = loose_upstream.raw("POST", path, chat_body("hallucinated?", context=CONTEXT))
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED  # the upstream did answer it
    assert resp.headers["x-truthlens-detected"] == "true"
    assert "truthlens_context" not in loose_upstream.upstream_calls()[-1]["params"]


@pytest.mark.parametrize("path", ["/v1/Responses", "/v1/responses/", "/v1/responses;x", "/V1/RESPONSES;a=b/"])
def test_responses_path_spellings_a_loose_upstream_serves_are_checked_as_the_responses_api(
    loose_upstream: Stack, path: str,
) -> None:
    resp = loose_upstream.raw("POST", path, _responses_body("hallucinated?"))
    assert resp.status == 200
    assert resp.json()["output"][0]["content"][0]["text"] == HALLUCINATED  # a Responses answer
    assert resp.headers["x-truthlens-detected"] == "true"
    assert "truthlens_context" not in loose_upstream.upstream_calls()[-1]["params"]


# ---------------------------------------------------------------- repeated headers


TEAM_DECISIONS = [
    {"name": "team", "priority": 200, "rules": {"type": "header", "name": "x-team", "value": "platform"},
     "plugins": [{"type": "hallucination", "configuration": {"actions": ["header"]}}]},
    {"name": "off", "priority": 100, "rules": {"type": "path", "prefix": CHAT},
     "plugins": [{"type": "hallucination", "configuration": {"enabled": False}}]},
]


@pytest.fixture
def routed(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, int]]:
    """A second Envoy on the routes ``truthlens envoy-routes`` prints for TEAM_DECISIONS: the team's
    exchanges through the processor (checked), the rest of the chat path past it."""
    assert stack.write_config(stack.config_yaml(decisions=TEAM_DECISIONS)) in ("applied", "unchanged")
    printed = subprocess.run(
        [sys.executable, "-m", "truthlens", "envoy-routes", "--config", str(stack.config_path),
         "--forward-context-field"], capture_output=True, text=True, timeout=60, check=True).stdout
    routes = yaml.safe_load(printed)["routes"]
    assert [r["name"] for r in routes][2:] == ["processor:unchecked", "processor:team", "bypass:off",
                                               "processor:catch-all"]
    stack.set_script(SCRIPT)
    try:
        with stack.second_envoy(routes, tmp_path_factory.mktemp("team-envoy")) as port:
            yield stack, port
    finally:
        stack.write_config(stack.config_yaml())


def _post_repeated(port: int, headers: list[tuple[str, str]]) -> RawResponse:
    """A request carrying the same header name more than once."""
    return post_with_headers(port, CHAT, chat_body("hallucinated?", context=CONTEXT), headers)


@pytest.mark.parametrize("values", [("sales", "platform"), ("platform", "platform"), ("platform", "")])
def test_a_repeated_header_is_read_by_one_rule_in_envoys_routes_and_the_processor(
    routed: tuple[Stack, int], values: tuple[str, ...],
) -> None:
    # Envoy's route sends the exchange to the processor because one value is "platform"; the
    # processor must read the header the same way, not as "sales,platform".
    stack, port = routed
    before = stack.extproc_messages()
    resp = _post_repeated(port, [("x-team", v) for v in values])
    assert stack.extproc_messages() > before  # through the processor
    assert resp.headers["x-truthlens-detected"] == "true"
    # No value is "platform": Envoy bypasses the processor, as the processor's rule would decide.
    before = stack.extproc_messages()
    resp = _post_repeated(port, [("x-team", "sales"), ("x-team", "platform-2")])
    assert stack.extproc_messages() == before
    assert "x-truthlens-detected" not in resp.headers


# ---------------------------------------------------------------- request bodies


@pytest.mark.parametrize("path", [CHAT, "/v1/embeddings"])  # a checked route, and no route at all
def test_a_malformed_request_that_mentions_the_context_field_is_refused_not_forwarded(lows: Stack, path: str) -> None:
    broken = b'{"model": "m", "messages": [{"role": "user", "content": "q"}], "truthlens_context": ["private"],'
    calls = len(lows.upstream_calls())
    resp = lows.raw("POST", path, broken)
    assert resp.status == 400
    assert resp.headers["x-truthlens-reason"] == "context_field_unremovable"
    error = resp.json()["error"]
    assert error["code"] == "context_field_unremovable" and "truthlens_context" in error["message"]
    assert len(lows.upstream_calls()) == calls  # the private passages never left the gateway
    # Without the field the gateway has nothing to keep back: the body goes on as it came, and
    # the answer is the upstream's own (its 400 for invalid JSON; no route for the embeddings path).
    resp = lows.raw("POST", path, broken.replace(b', "truthlens_context": ["private"]', b""))
    assert resp.status == (400 if path == CHAT else 404)
    assert resp.headers.get("x-truthlens-reason") != "context_field_unremovable"
    assert b"context_field_unremovable" not in resp.body




# ---------------------------------------------------------------- Responses answers


def test_a_top_level_output_text_that_differs_from_output_is_checked_too(lows: Stack) -> None:
    resp = lows.raw("POST", RESPONSES, _responses_body("divergent-output-text"))
    assert resp.status == 200
    body = resp.json()
    assert body["output"][0]["content"][0]["text"] == GROUNDED
    assert body["output_text"] == HALLUCINATED
    assert resp.headers["x-truthlens-detected"] == "true"  # never clean: the field a client reads is not


def test_a_text_part_is_read_and_checked(lows: Stack) -> None:
    resp = lows.raw("POST", RESPONSES, _responses_body("text-part"))
    assert resp.status == 200
    assert resp.json()["output"][0]["content"][0]["text"] == HALLUCINATED
    assert resp.headers["x-truthlens-detected"] == "true"
