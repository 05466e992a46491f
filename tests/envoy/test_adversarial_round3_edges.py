"""The third adversarial round's request-side, config and presentation cases, through Envoy:

- N64: the ``openai`` SDK's default ``Accept-Encoding: gzip, deflate`` against an upstream that
  honours it (nginx ``gzip on``): every answer was unchecked (``content_encoding``), block routes
  released, fail-closed routes answered 502. The processor now asks for ``identity``.
- N36: a gzip request body with the context field was forwarded compressed, field inside; it is
  refused (400 ``context_field_unremovable``) on checked, detection-off and unmatched paths.
- N47/N48: span offsets pointed into the upstream's answer, not the warned content the client
  holds; they now index the content received (JSON chat and Responses, held and passthrough
  streams), counted in code points, and docs/clients.md's JavaScript turns them into slices.
- N56: over ``max_streams``, a request with a repeated routing header was routed as if it had only
  its joined value (a fail-closed route's answer went out unchecked); it meets the same route.
- N59: ``x-request-id`` with Latin-1 bytes came back (and was logged) with U+FFFD in their place.
- N63: a path rule with a nested quantifier stalled the worker (Python's backtracking ``re``).

Real: Envoy (the shipped ``envoy.yaml``), gRPC, the processor with the shipped ONNX detector, the
``openai`` SDK, Node.js for the guide's JavaScript (skipped, saying so, where ``node`` is absent).
Scripted: the upstream (``truthlens.testing.upstream``; ``content_encoding: negotiate`` compresses
exactly when the request accepts gzip, as nginx does).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision, parse_sse, post_with_headers, responses_body

from truthlens.testing import launch

pytestmark = pytest.mark.envoy

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
# An emoji is one code point but two UTF-16 units: JavaScript's own indices drift past each one.
EMOJI_ANSWER = "🎉🎉🎉 The Eiffel 🗼 Tower was completed in 1925 and designed by Albert Speer."
SPANS = {"x-truthlens-include-spans": "true"}


def _responses_decision(name: str, route_header: str | None = None, **configuration: Any) -> dict[str, Any]:
    return decision(name, route_header=route_header, path_prefix=RESPONSES, **configuration)


DECISIONS = [
    decision("block", route_header="block", actions=["header", "block"]),
    decision("closed", route_header="closed", fail_policy="closed", actions=["header", "block"]),
    decision("hold", route_header="hold", streaming="hold", actions=["header", "body"]),
    decision("off", route_header="off", enabled=False),
    decision("chat", priority=10, actions=["header", "body"], streaming="passthrough"),
    _responses_decision("responses_hold", route_header="hold", streaming="hold", actions=["header", "body"]),
    _responses_decision("responses", priority=10, actions=["header", "body"], streaming="passthrough"),
]

FORGED = {"truthlens": {"status": "clean", "action": "none"}}
SCRIPT = [
    {"name": "compressing", "match": {"user": "compressing"},
     "reply": {"content": HALLUCINATED, "content_encoding": "negotiate", "extra_fields": FORGED}},
    {"name": "emoji", "match": {"user": "emoji"}, "reply": {"content": EMOJI_ANSWER, "chunk_tokens": 1}},
    {"name": "slow", "match": {"user": "slow-stream"},
     "reply": {"content": GROUNDED, "chunk_tokens": 1, "chunk_delay_s": 0.5}},
    {"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}},
]


@pytest.fixture
def edges(stack: Stack) -> Stack:
    return stack.serving(DECISIONS, SCRIPT)


def _responses_body(question: str, **extra: Any) -> dict[str, Any]:
    return responses_body(question, context=CONTEXT, **extra)


def _route(name: str | None) -> dict[str, str]:
    return {"x-test-route": name} if name else {}


# ---------------------------------------------------------------- N64: Accept-Encoding


@pytest.mark.parametrize(("route", "expected"), [(None, 200), ("block", 422), ("closed", 422)])
def test_the_sdks_default_accept_encoding_no_longer_leaves_answers_unchecked(
    edges: Stack, route: str | None, expected: int
) -> None:
    # The SDK sends its defaults (httpx: Accept-Encoding: gzip, deflate); the upstream compresses
    # whenever the request accepts gzip. Before: 200 unavailable/content_encoding on every route
    # (block released the answer; closed answered 502 to everything).
    client = edges.client.with_options(default_headers=_route(route))
    if expected == 200:
        raw = client.chat.completions.with_raw_response.create(
            model="test-model", messages=[{"role": "user", "content": "compressing?"}],
            extra_body={"truthlens_context": CONTEXT})
        assert raw.headers["x-truthlens-detected"] == "true" and raw.headers["x-truthlens-action"] == "warned"
        completion = raw.parse()
        assert completion.choices[0].message.content.endswith(HALLUCINATED)
        # The upstream's forged verdict field was read and dropped (it went out compressed before).
        assert "truthlens" not in (completion.model_extra or {})
    else:
        import openai

        with pytest.raises(openai.APIStatusError) as info:
            client.chat.completions.create(model="test-model", messages=[{"role": "user", "content": "compressing?"}],
                                           extra_body={"truthlens_context": CONTEXT})
        assert info.value.status_code == expected and info.value.response.headers["x-truthlens-detected"] == "true"
    (call,) = edges.upstream_calls()
    assert call["headers"]["accept-encoding"] == "identity"  # whatever the client accepts


def test_a_detection_off_route_keeps_the_clients_accept_encoding(edges: Stack) -> None:
    # Its answer streams past the processor unread, so nothing asks the upstream for identity:
    # the client gets the answer in the coding it accepted, as from Envoy alone.
    resp = edges.raw("POST", CHAT, chat_body("compressing?", context=CONTEXT),
                     {"x-test-route": "off", "accept-encoding": "gzip, deflate, br"})
    assert resp.status == 200 and resp.headers["content-encoding"] == "gzip"
    assert edges.upstream_calls()[-1]["headers"]["accept-encoding"] == "gzip, deflate, br"
    assert not any(name.startswith("x-truthlens-") for name in resp.headers)


# What docs/operations.md suggests to keep answers compressed towards clients: Envoy's compressor
# filter listed before ext_proc sees the client's Accept-Encoding first and compresses what the
# processor released (JSON and SSE).
COMPRESSOR = {"name": "envoy.filters.http.compressor", "typed_config": {
    "@type": "type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor",
    "response_direction_config": {"common_config": {"content_type": ["application/json", "text/event-stream"]}},
    "compressor_library": {"name": "gzip", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip"}}}}


def test_envoys_compressor_before_the_processor_still_gives_the_client_gzip(edges: Stack, tmp_path: Path) -> None:
    ports = launch.EnvoyPorts(listener=launch.free_port(), upstream=edges.ports.upstream,
                              processor=edges.ports.processor, admin=launch.free_port())
    doc = yaml.safe_load(launch.render_envoy_config(ports))
    doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"].insert(
        0, COMPRESSOR)
    envoy = launch.start_envoy(yaml.safe_dump(doc, sort_keys=False), tmp_path)
    try:
        launch.wait_envoy(ports.admin, envoy)
        for stream in (False, True):
            resp = edges.raw("POST", CHAT, chat_body("compressing?", context=CONTEXT, stream=stream),
                             {"accept-encoding": "gzip", **SPANS}, port=ports.listener)
            assert resp.headers["content-encoding"] == "gzip"
            text, verdict = _chat_text(RawResponse(resp.status, resp.headers, gzip.decompress(resp.body)), stream)
            assert HALLUCINATED in text and "Warning" in text  # checked and warned, then compressed
            assert verdict["action"] == "warned"
    finally:
        envoy.stop()
    assert [c["headers"]["accept-encoding"] for c in edges.upstream_calls()] == ["identity", "identity"]


# ---------------------------------------------------------------- N36: encoded request bodies


@pytest.mark.parametrize(("path", "route"), [(CHAT, None), (CHAT, "off"), (CHAT, "closed"), ("/v1/completions", None),
                                             (RESPONSES, None)])
def test_a_compressed_request_body_never_takes_the_context_field_upstream(
    edges: Stack, path: str, route: str | None
) -> None:
    body = chat_body("hallucinated?", context=["SECRET passage"]) if path != RESPONSES else {
        **_responses_body("hallucinated?"), "truthlens_context": ["SECRET passage"]}
    resp = edges.raw("POST", path, gzip.compress(json.dumps(body).encode()),
                     {"content-encoding": "gzip", **_route(route)})
    assert resp.status == 400
    assert resp.headers["x-truthlens-reason"] == "context_field_unremovable"
    assert resp.json()["error"]["code"] == "context_field_unremovable"
    assert edges.upstream_calls() == []  # before: forwarded compressed (the upstream decoded it, field and all)


# ---------------------------------------------------------------- N47/N48: span offsets


def _chat_text(resp: RawResponse, stream: bool) -> tuple[str, dict[str, Any]]:
    if not stream:
        doc = resp.json()
        return doc["choices"][0]["message"]["content"], doc["truthlens"]
    events = [e for e in parse_sse(resp.body) if e != "[DONE]"]
    text = "".join(c["delta"].get("content") or "" for e in events for c in e["choices"])
    (verdict,) = [e["truthlens"] for e in events if "truthlens" in e]
    return text, verdict


def _responses_text(resp: RawResponse, stream: bool) -> tuple[str, dict[str, Any]]:
    if not stream:
        doc = resp.json()
        (message,) = [item for item in doc["output"] if item["type"] == "message"]
        return "".join(part["text"] for part in message["content"] if part["type"] == "output_text"), doc["truthlens"]
    events = [e for e in parse_sse(resp.body) if e != "[DONE]"]
    text = "".join(e["delta"] for e in events if e.get("type") == "response.output_text.delta")
    (verdict,) = [e["truthlens"] for e in events if e.get("type") == "truthlens.verdict"]
    return text, verdict


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(("route", "stream", "position"), [
    (None, False, "prepend"), ("hold", True, "prepend"), (None, True, "append"),
])
def test_span_offsets_index_the_text_the_client_receives(
    edges: Stack, api: str, route: str | None, stream: bool, position: str
) -> None:
    # JSON and held streams prepend the warning (the route's position), a passthrough stream
    # appends it after the streamed answer. Before: the offsets were the upstream answer's, so
    # `content[start:end]` read inside the prepended warning (N47).
    headers = {**SPANS, **_route(route)}
    if api == "chat":
        resp = edges.raw("POST", CHAT, chat_body("emoji?", context=CONTEXT, stream=stream), headers)
        text, verdict = _chat_text(resp, stream)
    else:
        resp = edges.raw("POST", RESPONSES, _responses_body("emoji?", stream=stream), headers)
        text, verdict = _responses_text(resp, stream)
    assert resp.status == 200 and verdict["status"] == "detected" and verdict["action"] == "warned"
    assert verdict["warning_position"] == position
    assert (text.startswith(EMOJI_ANSWER), text.endswith(EMOJI_ANSWER)) == (position == "append", position == "prepend")
    spans = verdict["choices"][0]["spans"]
    assert any(s["text"] == "1925" for s in spans)
    for span in spans:  # code points: Python's own indices (N48)
        assert text[span["start"]:span["end"]] == span["text"]
    _check_with_the_guides_javascript(text, spans)


def _check_with_the_guides_javascript(text: str, spans: Sequence[dict[str, Any]]) -> None:
    """docs/clients.md's JavaScript, run by Node on the text received: its slices are the spans'
    texts, where JavaScript's own ``slice`` (UTF-16 units) is not once an emoji precedes a span."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the guide's JavaScript was not run (the Python checks above ran)")
    (code,) = re.findall(r"```js\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    script = code + """
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(input.spans.map((s) => ({
  guide: spanText(input.text, s), naive: input.text.slice(s.start, s.end) }))));
"""
    out = subprocess.run([node, "-e", script], input=json.dumps({"text": text, "spans": spans}),
                         capture_output=True, text=True, timeout=60, check=True).stdout
    slices = json.loads(out)
    assert [s["guide"] for s in slices] == [s["text"] for s in spans]
    assert any(s["naive"] != span["text"] for s, span in zip(slices, spans, strict=True))


# ---------------------------------------------------------------- N56: over max_streams


def test_over_the_stream_cap_a_repeated_routing_header_meets_the_same_route(edges: Stack) -> None:
    repeated = [("x-test-route", "closed"), ("x-test-route", "other")]
    body = chat_body("hallucinated?", context=CONTEXT)
    # Not overloaded: one of the values routes it to the fail-closed block route (as Envoy reads it).
    assert post_with_headers(edges.ports.listener, CHAT, body, repeated).status == 422
    config = edges.config_yaml(decisions=DECISIONS)
    assert edges.write_config(config.replace("version: 1\n", "version: 1\ngateway:\n  max_streams: 1\n", 1)) == "applied"
    try:
        held: list[RawResponse] = []
        thread = threading.Thread(target=lambda: held.append(edges.raw(
            "POST", CHAT, chat_body("slow-stream", context=CONTEXT, stream=True), {"x-test-route": "hold"})))
        thread.start()
        launch.wait_until(lambda: any(c["rule"] == "slow" for c in edges.upstream_calls()), "the slow call", None, 10)
        overloaded = post_with_headers(edges.ports.listener, CHAT, body, repeated)
        # Before: 200 with the unchecked hallucination (the overloaded path read only the joined value).
        assert overloaded.status == 503 and json.loads(overloaded.body)["error"]["code"] == "worker_overloaded"
        assert HALLUCINATED.encode() not in overloaded.body
        thread.join(30)
        assert held and held[0].status == 200
    finally:
        assert edges.write_config(config) in ("applied", "unchanged")


# ---------------------------------------------------------------- N59: x-request-id bytes


def test_a_latin1_request_id_is_echoed_as_sent_and_logged_unambiguously(edges: Stack) -> None:
    # http.client writes header values as Latin-1: these are the bytes caf\xe9-\xff on the wire.
    resp = edges.raw("POST", CHAT, chat_body("hallucinated?", context=CONTEXT), {"x-request-id": "r3-caf\xe9-\xff"})
    assert resp.status == 200 and resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-request-id"] == "r3-caf\xe9-\xff"  # the same bytes back (before: caf\ufffd-\ufffd)
    launch.wait_until(lambda: "r3-caf" in edges.processor_log(), "the audit line", None, 5)
    (line,) = [ln for ln in edges.processor_log().splitlines() if "r3-caf" in ln]
    assert 'request_id="r3-caf\\udce9-\\udcff"' in line  # U+DCxx: the byte 0xxx, which no UTF-8 text reads as


# ---------------------------------------------------------------- N63: path rules in RE2


def test_a_nested_quantifier_in_a_path_rule_cannot_stall_the_worker(edges: Stack) -> None:
    nested = {"name": "nested", "priority": 50, "rules": {"type": "path", "regex": "^/v1/(a+)+$"},
              "plugins": [{"type": "hallucination", "configuration": {"actions": ["header"]}}]}
    config = edges.config_yaml(decisions=[nested, *DECISIONS])
    assert edges.write_config(config) == "applied"
    try:
        # Python's re needed 7.4 s for 28 'a' and doubles per 'a': 40 would take hours. The
        # client's timeout is a hang guard, not a timing.
        attack = edges.raw("POST", "/v1/" + "a" * 40 + "!", {"model": "m"}, timeout_s=30)
        assert "x-truthlens-detected" not in attack.headers  # no decision matched it: not checked
        matched = edges.raw("POST", "/v1/" + "a" * 40, chat_body("hallucinated?", context=CONTEXT), timeout_s=30)
        assert matched.headers.get("x-truthlens-mode") == "lightweight"  # the nested rule's route holds
        normal = edges.raw("POST", CHAT, chat_body("hallucinated?", context=CONTEXT), timeout_s=30)
        assert normal.headers["x-truthlens-detected"] == "true"
    finally:
        assert edges.write_config(edges.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
