"""RAG pipelines built with the real framework packages, as their current docs show them, through
the real Envoy and processor: per pipeline, how many calls are checked and how many get the
verdict the same item gets with its passages in ``truthlens_context`` (the control).

Data: RAGTruth (Niu et al. 2024, MIT) QA responses via ``vectara/FaithJudge`` ``eval_data/``,
``--fold eval`` (the default: even ``source_id``, report only) or ``--fold dev``; ``--items``
responses, half hallucinated, picked as ``bench.request_shapes`` picks them. Each item's passages
are the pipeline's documents and its question the user's; the scripted upstream (the only double,
matched on a per-item model name) replays the RAGTruth response as the answer. The verdict each
pipeline got is read on the wire (:class:`truthlens.client_verdicts.VerdictRecorder`).

Needs the ``frameworks`` extra (``pip install -e '.[frameworks]'``). Run:
``python -m bench.framework_pipelines [--items 10] [--fold eval]``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.request_shapes import Item, pick_items, send
from truthlens.client_verdicts import VerdictRecorder
from truthlens.testing import launch

Pipeline = Callable[[Item, str, VerdictRecorder], None]


def _httpx(recorder: VerdictRecorder) -> Any:
    import httpx

    return httpx.Client(transport=recorder.transport())


def langchain_lcel(item: Item, base_url: str, recorder: VerdictRecorder) -> None:
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_openai import ChatOpenAI

    prompt = ChatPromptTemplate.from_template(
        "Answer the question based only on the following context:\n{context}\n\nQuestion: {question}\n")
    llm = ChatOpenAI(base_url=base_url, api_key="unused", model=item.key, http_client=_httpx(recorder))  # type: ignore[arg-type]
    (prompt | llm | StrOutputParser()).invoke({"context": "\n\n".join(item.passages), "question": item.question})


def langchain_v1_rag_chain(item: Item, base_url: str, recorder: VerdictRecorder) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelRequest, dynamic_prompt
    from langchain_openai import ChatOpenAI

    @dynamic_prompt
    def prompt_with_context(request: ModelRequest) -> str:
        docs = "\n\n".join(item.passages)
        return f"You are a helpful assistant. Use the following context in your response:\n\n{docs}"

    llm = ChatOpenAI(base_url=base_url, api_key="unused", model=item.key, http_client=_httpx(recorder))  # type: ignore[arg-type]
    create_agent(llm, tools=[], middleware=[prompt_with_context]).invoke(
        {"messages": [{"role": "user", "content": item.question}]})


def langchain_retrieval_chain(item: Item, base_url: str, recorder: VerdictRecorder) -> None:
    from langchain_classic.chains import create_retrieval_chain
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_core.documents import Document
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda
    from langchain_openai import ChatOpenAI

    system = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
              "answer the question. If you don't know the answer, just say that you don't know. Use three sentences "
              "maximum and keep the answer concise.\n\n{context}")
    prompt = ChatPromptTemplate.from_messages([("system", system), ("human", "{input}")])
    llm = ChatOpenAI(base_url=base_url, api_key="unused", model=item.key, http_client=_httpx(recorder))  # type: ignore[arg-type]
    retriever = RunnableLambda(lambda _: [Document(page_content=p) for p in item.passages])
    create_retrieval_chain(retriever, create_stuff_documents_chain(llm, prompt)).invoke({"input": item.question})


def llamaindex_compact(item: Item, base_url: str, recorder: VerdictRecorder) -> None:
    from llama_index.core import Document, SummaryIndex
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(model=item.key, api_base=base_url, api_key="unused", http_client=_httpx(recorder),
                     context_window=32_000)
    index = SummaryIndex.from_documents([Document(text=p) for p in item.passages])
    index.as_query_engine(response_mode="compact", llm=llm).query(item.question)


def llamaindex_context_chat(item: Item, base_url: str, recorder: VerdictRecorder) -> None:
    from llama_index.core import Document, SummaryIndex
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(model=item.key, api_base=base_url, api_key="unused", is_chat_model=True,
                     http_client=_httpx(recorder), context_window=32_000)
    index = SummaryIndex.from_documents([Document(text=p) for p in item.passages])
    index.as_chat_engine(chat_mode="context", llm=llm).chat(item.question)


def haystack_get_started(item: Item, base_url: str, recorder: VerdictRecorder) -> None:
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage, Document
    from haystack.utils import Secret

    template = [
        ChatMessage.from_system("\nGiven these documents, answer the question.\nDocuments:\n"
                                "{% for doc in documents %}\n    {{ doc.content }}\n{% endfor %}\nQuestion:\n"),
        ChatMessage.from_user("{{question}}"),
        ChatMessage.from_system("Answer:"),
    ]
    messages = ChatPromptBuilder(template=template).run(
        documents=[Document(content=p) for p in item.passages], question=item.question)["prompt"]
    llm = OpenAIChatGenerator(api_key=Secret.from_token("unused"), model=item.key, api_base_url=base_url,
                              http_client_kwargs={"transport": recorder.transport()})
    llm.run(messages=messages)


PIPELINES: dict[str, Pipeline] = {
    "langchain LCEL RAG chain": langchain_lcel,
    "langchain v1 RAG chain (create_agent)": langchain_v1_rag_chain,
    "langchain-classic create_retrieval_chain": langchain_retrieval_chain,
    "llamaindex compact (OpenAILike: /v1/completions)": llamaindex_compact,
    "llamaindex ContextChatEngine": llamaindex_context_chat,
    "haystack 3 Get Started": haystack_get_started,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.framework_pipelines", description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10, help="RAGTruth QA responses (default 10)")
    parser.add_argument("--fold", choices=("eval", "dev"), default="eval")
    args = parser.parse_args(argv)
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    items = [it for it in pick_items(args.fold, args.items) if it.task == "qa"]
    ports = launch.free_ports()
    rows: list[tuple[str, int, int, int]] = []
    with tempfile.TemporaryDirectory(prefix="framework-pipelines-") as tmp:
        work = Path(tmp)
        script = work / "script.json"
        script.write_text(json.dumps([{"name": it.key, "match": {"model": it.key}, "reply": {"content": it.answer}}
                                      for it in items]))
        config = work / "config.yaml"
        config.write_text(launch.config_yaml(None, f"http://127.0.0.1:{ports.upstream}/v1", hallucination={
            "budgets": {"detection_ms": 60_000, "total_ms": 120_000}}))
        with launch.running_stack(config, ports, work, script=script):
            base_url = f"http://127.0.0.1:{ports.listener}/v1"
            controls = [send(ports.listener, "/v1/chat/completions", {
                "model": it.key, "messages": [{"role": "user", "content": it.question}],
                "truthlens_context": list(it.passages)}).detected for it in items]
            for name, pipeline in PIPELINES.items():
                started = time.monotonic()
                checked = same = 0
                for item, control in zip(items, controls, strict=True):
                    recorder = VerdictRecorder()
                    pipeline(item, base_url, recorder)
                    verdict = recorder.last
                    got = verdict.detected if verdict is not None else None
                    checked += got in ("true", "false")
                    same += got == control
                rows.append((name, len(items), checked, same))
                print(f"  {name}: {len(items)} items in {time.monotonic() - started:.0f}s", flush=True)
    print(f"\nRAGTruth QA, {args.fold} fold, {len(items)} responses (half hallucinated); shipped config and model:")
    print("| pipeline | checked | same verdict as truthlens_context |")
    print("|---|---|---|")
    for name, n, checked, same in rows:
        print(f"| {name} | {checked}/{n} | {same}/{n} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
