"""LlamaIndex (llama-index-core 0.14.25, llama-index-llms-openai-like 0.8.1) through the real
stack: the docs page's code (``OpenAILike`` with its defaults, so the legacy completions API; a
compact query, a streamed query, a refine chain) is checked with the control's verdict, and the
refine chain's last call is flagged when its first invented the claim. Real: Envoy, gRPC
ext_proc, the processor with the shipped detector and decisions, the LlamaIndex packages.
Scripted: the upstream."""

from __future__ import annotations

import pytest
from conftest import DOCS, QUESTION, control, require, run_page
from harness import Stack
from shipped_inputs import WRONG_FACTS

pytestmark = [pytest.mark.envoy, pytest.mark.filterwarnings("ignore::UserWarning")]


def test_the_pages_code_shows_the_controls_verdict(gateway: Stack) -> None:
    require("llama_index.core", "llama_index.llms.openai_like")
    expected = control(gateway)
    assert expected == "true"
    ns = run_page("llamaindex", gateway)
    compact = ns["verdict"]
    assert compact.url.endswith("/v1/completions")  # OpenAILike's default
    assert compact.headers["x-truthlens-context-source"] == "template:llamaindex-text-qa"
    assert compact.detected == expected
    flagged = [str(ns["response"])[s["start"]:s["end"]] for s in compact.spans]
    assert flagged and all(any(f in part or part in f for f in WRONG_FACTS) for part in flagged), flagged
    streamed = ns["streamed_verdict"]
    assert streamed.complete and streamed.detected == expected
    assert any(f in ns["text"][s["start"]:s["end"]] for s in streamed.spans for f in WRONG_FACTS)
    refine = ns["recorder"].verdicts
    assert len(refine) == 2, [v.headers for v in refine]  # one call per document
    assert refine[-1].headers["x-truthlens-context-source"] == "template:llamaindex-refine,chain"
    assert [v.detected for v in refine] == [expected, expected]  # the last call flagged too


@pytest.mark.parametrize(("how", "source"), [
    ("tree_summarize", "template:llamaindex-tree-summarize"),
    ("simple_summarize", "template:llamaindex-text-qa"),  # its chunks formatted as a Python list
    ("context", "template:llamaindex-context-chat"),
    ("condense_plus_context", "template:llamaindex-condense-plus-context"),
])
def test_the_other_engines_are_checked_with_the_controls_verdict(gateway: Stack, how: str, source: str) -> None:
    require("llama_index.core", "llama_index.llms.openai_like")
    import httpx
    from llama_index.core import Document, SummaryIndex
    from llama_index.llms.openai_like import OpenAILike

    from truthlens.client_verdicts import VerdictRecorder

    recorder = VerdictRecorder()
    chat = how in ("context", "condense_plus_context")
    llm = OpenAILike(model="demo-model", api_base=gateway.base_url, api_key="unused", is_chat_model=chat,
                     http_client=httpx.Client(transport=recorder.transport()))
    index = SummaryIndex.from_documents([Document(text=d) for d in DOCS])
    if chat:
        index.as_chat_engine(chat_mode=how, llm=llm).chat(QUESTION)
    else:
        index.as_query_engine(response_mode=how, llm=llm).query(QUESTION)
    verdict = recorder.last
    assert verdict is not None
    assert verdict.headers["x-truthlens-context-source"] == source
    assert verdict.detected == control(gateway)
