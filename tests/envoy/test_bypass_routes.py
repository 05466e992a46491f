"""Routes from ``truthlens envoy-routes`` send detection-off exchanges past the processor, exactly.

Real: Envoy (the shipped ``envoy.yaml`` whose routes are replaced by what the command prints for
this config), gRPC, the processor and the shipped ONNX detector. Scripted: only the upstream,
which here also forges verdict headers and a ``truthlens`` body field.

The decisions, in the processor's order: ``checked`` (a header), then ``off`` (detection off:
another header, OR a path regex with a present header whose value does not contain "no"), then
``chat`` (checked, every chat path); a third branch of ``off`` negates a header value on an
exact path. Each request below is sent through that Envoy and asserted
both ways: bypassed (the processor's ``truthlens_extproc_messages_total`` does not move) exactly
when the processor's own matcher gives it the ``off`` decision.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from gateway_routes import CONTEXT, HALLUCINATED
from harness import RawResponse, Stack, chat_body

from truthlens.gateway.policy import decisions as matcher
from truthlens.gateway.policy.config import load_config
from truthlens.gateway.policy.decisions import RequestFacts

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
OFF = {"enabled": False}
DECISIONS = [
    {"name": "checked", "priority": 200,
     "rules": {"operator": "AND", "conditions": [{"type": "path", "prefix": PATH},
                                                 {"type": "header", "name": "x-test-route", "value": "checked"}]},
     "plugins": [{"type": "hallucination", "configuration": {"actions": ["header"]}}]},
    {"name": "off", "priority": 100,
     "rules": {"operator": "OR", "conditions": [
         {"type": "header", "name": "X-Team", "value": "platform"},
         {"operator": "AND", "conditions": [
             {"type": "path", "regex": r"^/v1/chat/complet[a-z]+s$"},
             {"type": "header", "name": "x-no-check", "present": True},
             {"operator": "NOT", "conditions": [{"type": "header", "name": "x-no-check", "contains": "no"}]},
         ]},
         {"operator": "AND", "conditions": [
             {"type": "path", "exact": "/v1/completions"},
             {"operator": "NOT", "conditions": [{"type": "header", "name": "x-keep", "value": "1"}]},
         ]},
     ]},
     "plugins": [{"type": "hallucination", "configuration": OFF}]},
    {"name": "chat", "priority": 10, "rules": {"type": "path", "prefix": PATH},
     "plugins": [{"type": "hallucination", "configuration": {"actions": ["header"]}}]},
]
FORGED_FIELD = {"status": "clean", "decision": "forged"}
FORGED_HEADERS = {"x-truthlens-detected": "false", "x-truthlens-score": "0.0000"}


@pytest.fixture(scope="module")
def bypass(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, int]]:
    """The shared stack on these decisions, and a second Envoy on the routes ``truthlens
    envoy-routes --forward-context-field`` prints for them; yields the stack and that Envoy's port."""
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    printed = subprocess.run(
        [sys.executable, "-m", "truthlens", "envoy-routes", str(stack.config_path),
         "--forward-context-field"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    routes = yaml.safe_load(printed)["routes"]
    assert [r["name"] for r in routes] == [
        "shipped:/v1/models", "shipped:/health", "processor:unchecked", "processor:checked", "bypass:off#1",
        "bypass:off#2", "bypass:off#3",
        "processor:chat", "processor:catch-all",
    ]
    stack.set_script([{"name": "answer", "match": {}, "reply": {
        "content": HALLUCINATED, "headers": FORGED_HEADERS, "extra_fields": {"truthlens": FORGED_FIELD}}}])
    try:
        with stack.second_envoy(routes, tmp_path_factory.mktemp("bypass-envoy")) as port:
            yield stack, port
    finally:
        stack.write_config(stack.config_yaml())  # the shared stack's own config again


def send(stack: Stack, port: int, path: str, headers: dict[str, str]) -> tuple[RawResponse, float]:
    """The response, and the ext_proc messages its exchange made."""
    before = stack.extproc_messages()
    resp = stack.raw("POST", path, chat_body("hallucinated?", context=CONTEXT), headers, port=port)
    return resp, stack.extproc_messages() - before


def processors_decision(stack: Stack, path: str, headers: dict[str, str]) -> str | None:
    config = load_config(stack.config_path)
    facts = RequestFacts(path=path, method="POST", headers={k.lower(): v for k, v in headers.items()})
    decision = matcher.match(config, facts)
    return None if decision is None else decision.name


def test_an_off_exchange_never_reaches_the_processor_and_gets_the_upstreams_answer(bypass: tuple[Stack, int]) -> None:
    stack, port = bypass
    resp, messages = send(stack, port, PATH, {"x-team": "platform"})
    assert messages == 0
    assert resp.status == 200
    body: dict[str, Any] = resp.json()
    assert body["choices"][0]["message"]["content"] == HALLUCINATED  # unchanged, not checked
    # What a bypassed route gives up: the body-level scrub (the forged field reaches the client) ...
    assert body["truthlens"] == FORGED_FIELD
    # ... and what it keeps: Envoy itself removes the upstream's forged verdict headers.
    assert not any(name.startswith("x-truthlens-") for name in resp.headers)
    # ... and the context field, which the processor would have removed, reaches the upstream.
    assert stack.upstream_calls()[-1]["params"]["truthlens_context"] == CONTEXT


def test_the_checked_route_still_gets_a_verdict(bypass: tuple[Stack, int]) -> None:
    stack, port = bypass
    resp, messages = send(stack, port, PATH, {"x-test-route": "checked"})
    assert messages >= 4
    assert resp.headers["x-truthlens-detected"] == "true"
    assert "truthlens" not in resp.json()  # the processor removed the forged field
    assert "truthlens_context" not in stack.upstream_calls()[-1]["params"]


def test_a_higher_priority_checked_decision_wins_over_the_off_condition(bypass: tuple[Stack, int]) -> None:
    stack, port = bypass
    headers = {"x-test-route": "checked", "x-team": "platform"}
    assert processors_decision(stack, PATH, headers) == "checked"
    resp, messages = send(stack, port, PATH, headers)
    assert messages >= 4
    assert resp.headers["x-truthlens-detected"] == "true"


@pytest.mark.parametrize(("path", "headers", "decision"), [
    (PATH, {}, "chat"),
    (PATH, {"x-team": "Platform"}, "chat"),  # values compare case-sensitively on both sides
    (PATH, {"x-team": "platform-2"}, "chat"),  # a value is exact, not a prefix
    (PATH, {"x-no-check": "please"}, "off"),  # regex, present, NOT contains
    (PATH + "?trace=1", {"x-no-check": "please"}, "off"),  # the query string is not part of the path
    (PATH, {"x-no-check": ""}, "off"),  # present with an empty value
    (PATH, {"x-no-check": "no thanks"}, "chat"),
    (PATH + "/x", {"x-no-check": "please"}, "chat"),  # the regex is anchored at the end
    ("/v1/chat/completions3s", {"x-no-check": "please"}, "chat"),  # [a-z]+: letters only
    ("/v1/chat/completionsXs", {"x-no-check": "please"}, "off"),  # the path compared is lower-cased
    ("/v1/embeddings", {"x-team": "platform"}, "off"),
    ("/v1/embeddings", {}, None),
    ("/v1/completions", {}, "off"),  # NOT value: an absent header does not hold it
    ("/v1/completions", {"x-keep": "2"}, "off"),
    ("/v1/completions", {"x-keep": "1"}, None),
    ("/v1/completions?a=b", {"x-keep": "1"}, None),
    ("/v1/completions/x", {}, None),  # exact path
    ("/v1/completions/", {}, "off"),  # ... read as paths are read: no trailing slash, any case, no ;params
    ("/V1/Completions;x", {}, "off"),
])
def test_envoy_bypasses_exactly_the_requests_the_processor_gives_the_off_decision(
    bypass: tuple[Stack, int], path: str, headers: dict[str, str], decision: str | None,
) -> None:
    stack, port = bypass
    assert processors_decision(stack, path, headers) == decision
    _resp, messages = send(stack, port, path, headers)
    assert (messages == 0) == (decision == "off")
