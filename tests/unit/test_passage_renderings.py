"""Two renderings of retrieved documents read back into their passages: a tool result made of
``Source: …`` / ``Content: …`` blocks (LangChain v1 docs' RAG agent: ``"\\n\\n".join(f"Source:
{doc.metadata}\\nContent: {doc.page_content}" ...)``) is one passage per block, without its source
lines; a context formatted as a Python list of chunks (llama-index-core 0.14.25
``simple_summarize``: ``text_qa_template.format(context_str=truncated_chunks)``, a list) is one
passage per chunk. Anything else is read as before. Pure functions; nothing is scripted."""

from __future__ import annotations

from truthlens.gateway.apis.context.passages import split, tool_passages
from truthlens.gateway.apis.context.settings import ContextSettings
from truthlens.gateway.apis.context.sources import gather

DOCS = ("The Eiffel Tower is a wrought-iron lattice tower in Paris, France.\n\nIt opened in 1889.",
        "It was designed by the engineering company of Gustave Eiffel.")
METADATA = ({"source": "https://example.org/eiffel", "start_index": 0}, {"source": "https://example.org/x", "start_index": 7})


def langchain_tool_result() -> str:
    return "\n\n".join(f"Source: {meta}\nContent: {doc}" for meta, doc in zip(METADATA, DOCS, strict=True))


def test_a_source_content_tool_result_is_one_passage_per_block_without_sources() -> None:
    assert tool_passages(langchain_tool_result()) == list(DOCS)
    found = gather(ContextSettings(), field=[], tools=[langchain_tool_result()], messages=[], question="q")
    assert (found.passages, found.source) == (DOCS, "tool")


def test_other_tool_results_stay_whole() -> None:
    for text in ("The weather in Paris is sunny.", "Note: Source: a line in passing\nContent: not a block",
                 "Intro first.\nSource: {}\nContent: x"):
        assert tool_passages(text) == [text]


def test_a_context_formatted_as_a_python_list_is_one_passage_per_chunk() -> None:
    chunks = ["file_path: /data/a.txt\n\nThe Eiffel Tower is in Paris.", "It's 330 metres tall, isn't it?"]
    assert split(str(chunks), "documents") == ["The Eiffel Tower is in Paris.", "It's 330 metres tall, isn't it?"]
    # LlamaIndex's text-QA prompt around it, as simple_summarize sends it.
    prompt = ("Context information is below.\n---------------------\n" + str(chunks) + "\n---------------------\n"
              "Given the context information and not prior knowledge, answer the query.\nQuery: How tall?\nAnswer: ")
    found = gather(ContextSettings(), field=[], tools=[], messages=[("user", prompt)], question=prompt)
    assert found.passages == ("The Eiffel Tower is in Paris.", "It's 330 metres tall, isn't it?")


def test_text_that_only_looks_like_a_list_is_read_as_before() -> None:
    for text in ("['a', 'b'] and more", "[1, 2, 3]", "['unclosed", "[\"x\", 1]"):
        assert split(text, "none") == [text]
