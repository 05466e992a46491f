"""LangChain (langchain 1.5.2, langchain-classic 1.0.8, langchain-openai 1.7.4) through the real
stack: the docs page's code (the LCEL RAG chain non-streamed and streamed, the v1 docs' RAG
chain) and the classic stuff-documents chain are checked with the control's verdict, and the
verdict is where the page says. Real: Envoy, gRPC ext_proc, the processor with the shipped
detector and decisions, the LangChain packages. Scripted: the upstream."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import DOCS, QUESTION, control, require, run_page
from harness import Stack
from shipped_inputs import HALLUCINATED, WRONG_FACTS

pytestmark = [pytest.mark.envoy, pytest.mark.filterwarnings("ignore::UserWarning")]


def test_the_pages_code_shows_the_controls_verdict(gateway: Stack) -> None:
    require("langchain", "langchain_openai")
    expected = control(gateway)
    assert expected == "true"  # the question's invented claim, flagged with truthlens_context
    ns = run_page("langchain", gateway)
    assert ns["headers"]["x-truthlens-detected"] == expected
    assert ns["headers"]["x-truthlens-context-source"] == "template:langchain-lcel-rag"
    streamed = ns["recorder"].verdicts[0]
    assert streamed.complete and streamed.detected == expected
    flagged = [ns["text"][s["start"]:s["end"]] for s in streamed.spans]
    assert flagged and all(any(f in part or part in f for f in WRONG_FACTS) for part in flagged), flagged
    agent = ns["recorder"].last
    assert agent.headers["x-truthlens-context-source"] == "template:langchain-v1-rag-chain"
    assert agent.detected == expected


def test_the_classic_stuff_documents_chain_is_checked(gateway: Stack) -> None:
    require("langchain_classic", "langchain_openai")
    import httpx
    from langchain_classic.chains import create_retrieval_chain
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_core.documents import Document
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda
    from langchain_openai import ChatOpenAI

    from truthlens.client_verdicts import VerdictRecorder

    recorder = VerdictRecorder()
    llm = ChatOpenAI(base_url=gateway.base_url, api_key="unused", model="demo-model",  # type: ignore[arg-type]
                     http_client=httpx.Client(transport=recorder.transport()))
    # The create_retrieval_chain examples' system prompt, "just say that you don't know".
    system = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
              "answer the question. If you don't know the answer, just say that you don't know. Use three sentences "
              "maximum and keep the answer concise.\n\n{context}")
    prompt = ChatPromptTemplate.from_messages([("system", system), ("human", "{input}")])
    retriever = RunnableLambda(lambda _: [Document(page_content=d) for d in DOCS])
    chain: Any = create_retrieval_chain(retriever, create_stuff_documents_chain(llm, prompt))
    chain.invoke({"input": QUESTION})
    verdict = recorder.last
    assert verdict is not None
    assert verdict.headers["x-truthlens-context-source"] == "template:langchain-retrieval-chain"
    assert verdict.detected == control(gateway)


@pytest.mark.parametrize("chain_type", ["map_reduce", "refine"])
def test_a_summarize_chains_last_step_is_checked_against_every_document(gateway: Stack, chain_type: str) -> None:
    # langchain-classic's load_summarize_chain (its summarize prompts, one call per document, then
    # the reduce or refine steps). The upstream invents a claim in every step: the first steps are
    # flagged against their document, and the last, which is given only the earlier summaries, is
    # flagged too: it is checked against the documents behind them.
    require("langchain_classic", "langchain_openai")
    import httpx
    from langchain_classic.chains.summarize import load_summarize_chain
    from langchain_core.documents import Document
    from langchain_openai import ChatOpenAI

    from truthlens.client_verdicts import VerdictRecorder

    gateway.set_script([{"name": "invents", "match": {"any": "Eiffel"}, "reply": {"content": HALLUCINATED}}])
    recorder = VerdictRecorder()
    # custom_get_token_ids: map_reduce counts tokens, and tiktoken would download its tables.
    llm = ChatOpenAI(base_url=gateway.base_url, api_key="unused", model="demo-model",  # type: ignore[arg-type]
                     http_client=httpx.Client(transport=recorder.transport()),
                     custom_get_token_ids=lambda text: list(range(len(text.split()))))
    chain: Any = load_summarize_chain(llm, chain_type=chain_type)
    chain.invoke({"input_documents": [Document(page_content=d) for d in DOCS]})
    verdicts = recorder.verdicts
    # map_reduce: a map call per document, then the reduce; refine: the first document, then a refine.
    assert len(verdicts) == {"map_reduce": 3, "refine": 2}[chain_type], [v.headers for v in verdicts]
    assert all(v.detected == "true" for v in verdicts)
    assert verdicts[-1].headers["x-truthlens-context-source"].endswith(",chain")


def test_a_completion_models_batched_prompts_are_said_unchecked_and_checked_one_by_one(gateway: Stack) -> None:
    # langchain-openai's OpenAI LLM (the legacy completions API) sends up to batch_size prompts in
    # one request; their answers go with different contexts, so that request is answered
    # unavailable (bad_field), and batch_size=1 has each prompt checked.
    require("langchain_openai")
    import httpx
    from langchain_openai import OpenAI

    from truthlens.client_verdicts import VerdictRecorder

    prompts = [f"Answer the question based only on the following context:\n{doc}\n\nQuestion: {QUESTION}\n"
               for doc in DOCS]
    for batch_size, expected in ((20, ["unavailable"]), (1, ["true", "true"])):
        recorder = VerdictRecorder()
        llm = OpenAI(base_url=gateway.base_url, api_key="unused", model="demo-model",  # type: ignore[arg-type]
                     batch_size=batch_size, http_client=httpx.Client(transport=recorder.transport()))
        llm.generate(prompts)
        assert [v.detected for v in recorder.verdicts] == expected, [v.headers for v in recorder.verdicts]
        if batch_size > 1:
            assert recorder.last is not None and recorder.last.headers["x-truthlens-reason"] == "bad_field"
