"""The current docs' templates, and every template read through small edits of its opening: each
new built-in template, rendered from the text its source prints, is read back into its passages
and question; copies with a word added, dropped or changed, or their rules reworded (written
here by hand, never tuned on) are read as the template they copy; ordinary messages that share a
template's phrases, or begin like one and then ask for something else, are not read, and a
request that comes close is told the nearest template. ``bench/template_edits.py`` measures the
same on seeded random edits and RAGTruth chat. Pure functions; nothing is scripted."""

from __future__ import annotations

import pytest

from truthlens.gateway.apis.context.settings import ContextSettings
from truthlens.gateway.apis.context.sources import Context, gather

DOCS = ("The Eiffel Tower was designed by the company of Gustave Eiffel.",
        "The tower is 330 metres tall and stands on the Champ de Mars in Paris.")
QUESTION = "Who designed the Eiffel Tower?"
JOINED = "\n\n".join(DOCS)


def read(*messages: tuple[str, str]) -> Context:
    question = next((text for role, text in reversed(messages) if role == "user"), "")
    return gather(ContextSettings(), field=[], tools=[], messages=list(messages), question=question)


def haystack_loop(docs: tuple[str, ...], indent: str = "    ") -> str:
    """Haystack's Jinja loop ``{% for doc in documents %}\\n    {{ doc.content }}\\n{% endfor %}``."""
    return "".join(f"\n{indent}{d}\n" for d in docs)


# Each new built-in template as its source renders it (see builtin.py for the versions).
RENDERED = {
    # LangChain v1 docs, RAG chain: the @dynamic_prompt system message ("\n\n".join of page_content).
    "langchain-v1-rag-chain": [("system", f"You are a helpful assistant. Use the following context in your response:"
                                          f"\n\n{JOINED}"), ("user", QUESTION)],
    # LangChain LCEL RAG chain: ChatPromptTemplate.from_template(...), one human message.
    "langchain-lcel-rag": [("user", f"Answer the question based only on the following context:\n{JOINED}\n\n"
                                    f"Question: {QUESTION}\n")],
    # The create_retrieval_chain examples' system prompt, "just say".
    "langchain-retrieval-chain": [("system", "You are an assistant for question-answering tasks. Use the following "
                                             "pieces of retrieved context to answer the question. If you don't know "
                                             "the answer, just say that you don't know. Use three sentences maximum "
                                             f"and keep the answer concise.\n\n{JOINED}"), ("user", QUESTION)],
    # Haystack 3 Get Started: system documents and a trailing Question:, the question, a system Answer:.
    "haystack-get-started": [("system", "\nGiven these documents, answer the question.\nDocuments:\n"
                                        f"{haystack_loop(DOCS)}\nQuestion:\n"), ("user", QUESTION), ("system", "Answer:")],
    # haystack-ai 3.4.1 PromptBuilder docstring, indented as the docstring writes it.
    "haystack-prompt-builder": [("user", "\n        Given these documents, answer the question.\n        Documents:\n"
                                         f"        {haystack_loop(DOCS, '            ')}\n\n        Question: {QUESTION}"
                                         "\n        Answer:\n        ")],
}


@pytest.mark.parametrize("name", sorted(RENDERED))
def test_the_current_docs_templates_are_read(name: str) -> None:
    found = read(*RENDERED[name])
    assert found.source == f"template:{name}"
    assert (found.passages, found.question) == (DOCS, QUESTION)


def test_the_summarization_tutorials_system_only_prompt_is_read_with_its_instruction() -> None:
    # LangChain v0.3 summarization tutorial: ("system", "Write a concise summary of the following:\n\n{context}"),
    # no user message at all.
    found = read(("system", f"Write a concise summary of the following:\n\n{JOINED}"))
    assert found.source == "template:langchain-summarize-system"
    assert found.passages == DOCS and found.question == "Write a concise summary of the following:"


# Edited copies, written by hand: (the template they copy, the messages).
EDITED = [
    ("langchain-v1-rag-chain", [("system", f"You are a very helpful assistant. Use the following context in your "
                                           f"answer:\n\n{JOINED}"), ("user", QUESTION)]),
    ("langchain-v1-rag-chain", [("system", f"You are helpful. Use the following context in your response:\n\n"
                                           f"{JOINED}"), ("user", QUESTION)]),
    pytest.param("langchain-stuff-documents", [
        ("system", "You are an assistant for question-answering tasks. Use the following pieces of retrieved context "
                   "to answer the question. If you don't know the answer, say so. Keep the answer short, three "
                   f"sentences at most.\n\n{JOINED}"), ("user", QUESTION)],
        marks=pytest.mark.xfail(strict=True, reason="a heavier rewording (about one word in four of the rules changed: "
                                "agreement 0.78, under MATCH_RATIO 0.8) is not read; its skip names the template")),
    ("langchain-lcel-rag", [("user", f"Answer the question based only on the context below:\n{JOINED}\n\n"
                                     f"Question: {QUESTION}\n")]),
    ("langchain-rag-prompt", [("user", "You are an assistant for question-answering tasks. Use the following pieces "
                                       "of retrieved context to answer the question. If you do not know the answer, "
                                       "simply say that you don't know. Use three sentences maximum and keep the "
                                       f"answer concise.\nQuestion: {QUESTION} \nContext: {JOINED} \nAnswer:")]),
    ("haystack-get-started", [("system", "Given these documents, please answer the question.\nDocuments:\n"
                                         f"{haystack_loop(DOCS)}\nQuestion:"), ("user", QUESTION)]),
    ("llamaindex-condense-plus-context", [
        ("system", "The following is a friendly conversation between a user and an AI assistant.\nThe assistant is "
                   "talkative and gives lots of specific details from its context.\nIf the assistant does not know "
                   "the answer to a question, it says it does not know.\n\nHere are the relevant documents for the "
                   f"context:\n\n{JOINED}\n\nInstruction: Based on the above documents, provide a detailed answer for "
                   "the user question below.\nAnswer \"don't know\" if not present in the document.\n"),
        ("user", QUESTION)]),
]


@pytest.mark.parametrize(("name", "messages"), EDITED)
def test_an_edited_copy_is_read_as_the_template_it_copies(name: str, messages: list[tuple[str, str]]) -> None:
    found = read(*messages)
    assert found.source == f"template:{name}"
    assert (found.passages, found.question) == (DOCS, QUESTION)


# Ordinary messages that share a template's words: (messages, the template a skip names or "").
ORDINARY = [
    ([("system", "You are a helpful assistant."), ("user", "What is the capital of France?")], ""),
    ([("system", "You are a helpful assistant. Use the following tone in your response:\n\nwarm and brief."),
      ("user", "Hi")], "langchain-v1-rag-chain"),
    # Shares six of the LCEL prompt's nine opening words: named, not read.
    ([("user", "Answer the question based only on what you know for sure.\nWho built the pyramids?")],
     "langchain-lcel-rag"),
    # Begins like Haystack's Get Started but names no documents: not read, the closest named.
    ([("system", "Given these constraints, answer the question.\nBe brief and polite."), ("user", QUESTION)],
     "haystack-get-started"),
    ([("user", "Can you use the following pieces of context to answer the question at the end? I think so.")], ""),
    # The first half of a template's opening: under NEAR_RATIO (0.64), not even named.
    ([("system", "You are an assistant for question-answering tasks. Use the following pieces of retrieved "
                 "context to answer the question."), ("user", QUESTION)], ""),
]


@pytest.mark.parametrize(("messages", "near"), ORDINARY)
def test_a_message_that_only_shares_phrases_is_not_read(messages: list[tuple[str, str]], near: str) -> None:
    found = read(*messages)
    assert (found.source, found.passages) == ("", ())
    assert found.near_template == near


def test_a_copy_that_no_longer_names_the_context_is_not_read_but_named() -> None:
    found = read(("system", f"You are a helpful assistant. Use the following tone in your response:\n\n{JOINED}"),
                 ("user", QUESTION))
    assert found.passages == () and found.near_template == "langchain-v1-rag-chain"
