"""Every mode through the real Envoy against a REAL model server: llama.cpp (llama-cpp-python's
OpenAI-compatible server) serving Gemma 3 270M base — nothing scripted. Real too: Envoy, gRPC
ext_proc, the processor, the shipped detector in ONNX Runtime. The primary answer and every
re-ask (verifiers, verdicts, judge, refinements, ACR's agents, the generative detector) come
from that tiny model, so these tests assert what a user relies on, never what the model says:

- the exchange ends within the route's budget and the server is free after it (a small request
  straight to it answers at once: no abandoned call is still generating);
- the verdict is ``true``/``false``, or ``unavailable`` with a reason;
- a ``rewritten`` answer is an answer (not the prompt, the passages, JSON or the original in
  quotes) and one the re-check passes;
- what the server does not support is worked around and named (ACR's fallbacks), or the reason
  the work could not be done is given.

The server honours neither ``n > 1`` nor ``logprobs`` nor ``json_schema``; it serves one request
at a time, on one thread.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from harness import RawResponse, decision, parse_sse

from truthlens.modes.prompts import REFINE_SYSTEM
from truthlens.modes.revisions import why_not_an_answer
from truthlens.testing.llama_server import MODE_OPTIONS, MODELS, PASSAGE, QUESTION, grounded_request

from .real_stack import RealServerStack

pytestmark = pytest.mark.envoy

# Each route's whole-check budget. Wide enough for a few calls on a contended core, far below the
# minutes an unbounded call used to take; the premium and ACR checks may run out of it, and then
# must say so.
BUDGET_MS = {"lightweight": 20_000, "standard": 40_000, "premium": 40_000, "acr": 30_000, "auto": 40_000,
             "cascade": 30_000, "llm_detector": 30_000}
# A probe of a free server: 4 tokens take well under a second; an abandoned call still generating
# would hold it for up to its max_tokens (many seconds).
FREE_WITHIN_S = 10.0


def routes() -> list[dict[str, Any]]:
    return [decision(f"{mode}_route", route_header=mode, mode=mode, actions=["header", "body"],
                     budgets={"detection_ms": 5000, "total_ms": BUDGET_MS[mode]}, **options)
            for mode, options in MODE_OPTIONS.items()]


def use(stack: RealServerStack, *, detector: dict[str, Any] | None = None,
        decisions: list[dict[str, Any]] | None = None) -> None:
    """The routes of this module; ``detector`` replaces the detector section (a restart applies it)."""
    doc = yaml.safe_load(stack.config_yaml(decisions=decisions or routes(), models=MODELS))
    if detector is not None:
        doc["detector"] = detector
        stack.stop_processor()
        stack.config_path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        stack.start_processor()
        stack.wait_processor()
        return
    assert stack.write_config(yaml.safe_dump(doc, sort_keys=False)) in ("applied", "unchanged")


def ask(stack: RealServerStack, route: str, *, stream: bool = False) -> tuple[RawResponse, float]:
    """One exchange through Envoy: the passage in the user message (so the model sees it) and in
    the context field (so the processor checks against it)."""
    body = grounded_request(stream=stream)
    start = time.monotonic()
    # The spans header also asks for the verdict's details in the body (with the mode's attributes).
    resp = stack.raw("POST", "/v1/chat/completions", body, {"x-test-route": route, "x-truthlens-include-spans": "true"},
                     timeout_s=150)
    return resp, time.monotonic() - start


def assert_bounded_and_server_free(stack: RealServerStack, resp: RawResponse, route: str) -> None:
    assert resp.status == 200, resp.body[:500]
    check_ms = int(resp.headers["x-truthlens-latency-ms"])
    assert check_ms <= BUDGET_MS[route] + 1000, f"the {route} check took {check_ms} ms"
    assert stack.llama is not None
    probe_s = stack.llama.complete("Say hello.", max_tokens=4, timeout_s=60)
    assert probe_s < FREE_WITHIN_S, f"the server was still busy {probe_s:.1f}s after the {route} exchange"


def assert_verdict(resp: RawResponse) -> str:
    detected = resp.headers["x-truthlens-detected"]
    assert detected in ("true", "false", "unavailable")
    if detected == "unavailable":
        assert resp.headers.get("x-truthlens-reason"), resp.headers
    return detected


def content(resp: RawResponse) -> str:
    return str(resp.json()["choices"][0]["message"]["content"])


def assert_rewrite_is_an_answer(resp: RawResponse) -> None:
    """The answer was rewritten, into an answer (not the prompt, the passages, JSON or a quote of
    the original), and one the re-check passes."""
    assert resp.headers.get("x-truthlens-action") == "rewritten", resp.headers
    details = resp.json()["truthlens"]
    assert details["choices"][0]["status"] == "clean", details
    assert why_not_an_answer(content(resp), original="", question=QUESTION, passages=[PASSAGE],
                             instructions=(REFINE_SYSTEM,)) is None, content(resp)


def assert_outcome(resp: RawResponse) -> str:
    """The exchange's outcome on a route with ``actions: [header, body]``, each asserted for what it
    says: ``rewritten`` (:func:`assert_rewrite_is_an_answer`), ``warned`` (a detected answer
    carrying the warning), ``none`` (nothing found, or the check could not run: then a reason).
    Which one the tiny model leads to is its business; that each is what it says is ours."""
    action = resp.headers.get("x-truthlens-action")
    detected = assert_verdict(resp)
    if action == "rewritten":
        assert_rewrite_is_an_answer(resp)
    elif action == "warned":
        assert detected != "false" and "Warning" in content(resp), (resp.headers, content(resp))
    else:
        assert action == "none" and detected in ("false", "unavailable"), resp.headers
    return str(action)


@pytest.mark.parametrize("route", ["lightweight", "standard", "premium", "auto"])
def test_a_mode_against_the_real_server_ends_in_budget_and_frees_it(real_stack: RealServerStack, route: str) -> None:
    """Real llama.cpp + Gemma 3 270M answers and re-asks; nothing scripted."""
    use(real_stack)
    resp, _ = ask(real_stack, route)
    assert_bounded_and_server_free(real_stack, resp, route)
    assert_verdict(resp)
    assert content(resp).strip()
    assert_outcome(resp)
    if route == "premium" and resp.headers.get("x-truthlens-consensus") == "false":
        # Why not: the verifiers disagreed, their verdicts were unreadable or failed, or said unknown.
        assert resp.headers["x-truthlens-consensus-reason"] in ("disagree", "unreadable", "failed", "unverified")


def test_lightweight_stream_from_the_real_server_carries_the_verdict(real_stack: RealServerStack) -> None:
    """llama.cpp's own SSE (role-only first chunk, chunked encoding) through Envoy; nothing scripted."""
    use(real_stack)
    resp, _ = ask(real_stack, "lightweight", stream=True)
    assert resp.status == 200
    events = parse_sse(resp.body)
    assert events and events[-1] == "[DONE]"
    verdicts = [e["truthlens"] for e in events if isinstance(e, dict) and "truthlens" in e]
    assert verdicts and verdicts[-1]["status"] in ("detected", "clean", "unavailable")
    text = "".join(c["delta"].get("content") or "" for e in events if isinstance(e, dict)
                   for c in e.get("choices", ()))
    assert text.strip()
    assert real_stack.llama is not None
    assert real_stack.llama.complete("Say hello.", max_tokens=4, timeout_s=60) < FREE_WITHIN_S


def test_acr_works_or_says_exactly_why_not(real_stack: RealServerStack) -> None:
    """ACR's agents against the real server (no n, no log-probs); nothing scripted."""
    use(real_stack)
    resp, _ = ask(real_stack, "acr")
    assert_bounded_and_server_free(real_stack, resp, "acr")
    assert_verdict(resp)
    body = resp.json()
    assert "truthlens" in body, (resp.headers, body)
    acr = body["truthlens"]["attributes"]["acr"]
    # The server ignores n and returns no log-probs: both worked around and named.
    if acr["outcome"] == "incomplete":
        assert acr["reason"], acr
    else:
        assert {"sequential_samples", "no_logprobs"} <= set(acr["fallbacks"]), acr
        assert acr["confidence_source"] == "agreement" and "log-probs" in acr["confidence_reason"]
    assert_outcome(resp)


@pytest.mark.parametrize("stage", ["cascade", "llm_detector"])
def test_generative_detectors_work_or_say_exactly_why_not(real_stack: RealServerStack, stage: str) -> None:
    """The real server as the span detector (no json_schema: the client falls back); nothing scripted."""
    judge = {"model": "judge", "max_tokens": 128}
    route = decision(f"{stage}_route", route_header=stage, mode="lightweight", actions=["header", "body"],
                     budgets={"detection_ms": BUDGET_MS[stage], "total_ms": BUDGET_MS[stage]},
                     **({"confirm": True} if stage == "cascade" else {}))
    if stage == "cascade":
        shipped = yaml.safe_load(real_stack.config_yaml())["detector"]
        use(real_stack, detector={**shipped, "confirm": judge}, decisions=[route])
    else:
        use(real_stack, detector={"backend": "llm", "llm": judge}, decisions=[route])
    try:
        resp, _ = ask(real_stack, stage)
        assert_bounded_and_server_free(real_stack, resp, stage)
        if assert_verdict(resp) == "unavailable":  # the generative stage's own reasons, exactly
            assert resp.headers["x-truthlens-reason"] in (
                "detector_timeout", "detector_unavailable", "detector_unreadable", "detector_error"), resp.headers
        if stage == "cascade" and "x-truthlens-confirm" in resp.headers:
            assert resp.headers["x-truthlens-confirm"]
    finally:
        shipped_detector = yaml.safe_load(real_stack.config_yaml())["detector"]
        use(real_stack, detector=shipped_detector)  # the shipped detector for whatever runs next
