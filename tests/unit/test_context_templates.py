"""Context wherever applications put it: each framework's default template, rendered from the
framework's own template text at the version named beside it (copied verbatim here, with the
framework's slot names, and filled the way the framework fills it), is read back into the
passages the framework joined and the question; the plain layouts likewise; ordinary chat is
never read as a template."""

from __future__ import annotations

import pytest

from truthlens.gateway.apis.context import passages
from truthlens.gateway.apis.context.reading import BUILTIN, Reading, recognise
from truthlens.gateway.apis.context.templates import Template, TemplateError

DOCS = (
    "The Eiffel Tower was designed by the company of Gustave Eiffel.\nIt was built from 1887 to 1889.",
    "The tower is 330 metres tall and stands on the Champ de Mars in Paris.",
    "It was the entrance arch to the 1889 World's Fair.",
)
QUESTION = "Who designed the Eiffel Tower?"


def format_docs(docs: tuple[str, ...]) -> str:
    """LangChain's format_docs of its RAG tutorial, and the stuff chains' default
    (langchain-classic 1.0.8, combine_documents/base.py DEFAULT_DOCUMENT_SEPARATOR)."""
    return "\n\n".join(docs)


def llamaindex_nodes(docs: tuple[str, ...]) -> str:
    """Nodes as llama-index-core 0.14.25 packs them for its prompts: each node's text after its
    metadata (schema.py DEFAULT_TEXT_NODE_TMPL "{metadata_str}\\n\\n{content}", metadata lines
    "{key}: {value}"), the chunks joined by indices/prompt_helper.py repack ("\\n\\n".join)."""
    return "\n\n".join(f"file_path: /data/doc{i}.txt\nfile_name: doc{i}.txt\n\n{d}" for i, d in enumerate(docs))


def read(messages: list[tuple[str, str]]) -> Reading:
    found = recognise(messages, BUILTIN)
    assert found is not None, messages
    return found


# ------------------------------------------------------------------------------- LangChain

# LangChain hub rlm/rag-prompt, as langchain's docs/docs/tutorials/rag.ipynb prints it (v0.3 docs).
LC_RAG_PROMPT = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved context "
                 "to answer the question. If you don't know the answer, just say that you don't know. Use three "
                 "sentences maximum and keep the answer concise.\nQuestion: {question} \nContext: {context} \nAnswer:")
# The system prompt langchain's docs/docs/tutorials/rag.ipynb and pdf_qa.ipynb (v0.3 docs) give
# create_stuff_documents_chain / create_retrieval_chain, with ("human", "{input}").
LC_STUFF_SYSTEM = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved context "
                   "to answer the question. If you don't know the answer, say that you don't know. Use three "
                   "sentences maximum and keep the answer concise.\n\n{context}")
# langchain-classic 1.0.8, chains/summarize/stuff_prompt.py (map_reduce_prompt.py: the same text).
LC_SUMMARIZE = 'Write a concise summary of the following:\n\n\n"{text}"\n\n\nCONCISE SUMMARY:'
# langchain-classic 1.0.8, chains/question_answering/stuff_prompt.py PROMPT and CHAT_PROMPT's system message.
LC_STUFF_QA = ("Use the following pieces of context to answer the question at the end. If you don't know the answer, "
               "just say that you don't know, don't try to make up an answer.\n\n{context}\n\nQuestion: {question}\n"
               "Helpful Answer:")
LC_STUFF_QA_CHAT = ("Use the following pieces of context to answer the user's question.\nIf you don't know the answer, "
                    "just say that you don't know, don't try to make up an answer.\n----------------\n{context}")


def test_langchain_hub_rag_prompt_in_one_human_message() -> None:
    found = read([("user", LC_RAG_PROMPT.format(question=QUESTION, context=format_docs(DOCS)))])
    assert (found.name, found.passages, found.question) == ("langchain-rag-prompt", DOCS, QUESTION)


def test_langchain_stuff_documents_chain_system_prompt_with_the_human_question() -> None:
    found = read([("system", LC_STUFF_SYSTEM.format(context=format_docs(DOCS))), ("user", QUESTION)])
    assert found.name == "langchain-stuff-documents" and found.passages == DOCS
    assert found.question is None  # the user's message is the question


def test_langchain_retrieval_qa_chat_hub_prompt() -> None:
    system = f"Answer any use questions based solely on the context below:\n\n<context>\n{format_docs(DOCS)}\n</context>"
    found = read([("system", system), ("user", "hello"), ("assistant", "Hi!"), ("user", QUESTION)])
    assert found.name == "langchain-retrieval-qa-chat" and found.passages == DOCS


def test_langchain_stuff_qa_prompts_of_retrieval_qa() -> None:
    assert read([("user", LC_STUFF_QA.format(context=format_docs(DOCS), question=QUESTION))]).name == \
        "langchain-stuff-qa"
    found = read([("system", LC_STUFF_QA_CHAT.format(context=format_docs(DOCS))), ("user", QUESTION)])
    assert found.name == "langchain-stuff-qa-chat" and found.passages == DOCS


def test_langchain_summarize_prompt_stands_its_instruction_as_the_question() -> None:
    found = read([("user", LC_SUMMARIZE.format(text=format_docs(DOCS)))])
    assert found.name == "langchain-summarize" and found.passages == DOCS
    assert found.question == "Write a concise summary of the following:"


def test_langchain_refine_summary_keeps_the_existing_summary_as_context() -> None:
    # langchain-classic 1.0.8, chains/summarize/refine_prompts.py REFINE_PROMPT_TMPL.
    template = ("Your job is to produce a final summary.\nWe have provided an existing summary up to a certain point: "
                "{existing_answer}\nWe have the opportunity to refine the existing summary (only if needed) with some "
                "more context below.\n------------\n{text}\n------------\nGiven the new context, refine the original "
                "summary.\nIf the context isn't useful, return the original summary.")
    found = read([("user", template.format(existing_answer="Gustave Eiffel's company built it.", text=DOCS[1]))])
    assert found.name == "langchain-summarize-refine"
    assert found.passages == (DOCS[1], "Gustave Eiffel's company built it.")


# ------------------------------------------------------------------------------- LlamaIndex

# llama-index-core 0.14.25: prompts/chat_prompts.py TEXT_QA_SYSTEM_PROMPT and the user message of
# CHAT_TEXT_QA_PROMPT (= default_prompts.py DEFAULT_TEXT_QA_PROMPT_TMPL).
LI_SYSTEM = ("You are an expert Q&A system that is trusted around the world.\nAlways answer the query using the "
             "provided context information, and not prior knowledge.\nSome rules to follow:\n1. Never directly "
             "reference the given context in your answer.\n2. Avoid statements like 'Based on the context, ...' or "
             "'The context information ...' or anything along those lines.")
LI_TEXT_QA = ("Context information is below.\n---------------------\n{context_str}\n---------------------\n"
              "Given the context information and not prior knowledge, answer the query.\nQuery: {query_str}\nAnswer: ")
# llama-index-core 0.14.25, chat_engine/context.py DEFAULT_CONTEXT_TEMPLATE; chat_engine/utils.py
# get_prefix_messages_with_context appends the engine's system prompt to it.
LI_CONTEXT_CHAT = "Use the context information below to assist the user.\n--------------------\n{context_str}" \
                  "\n--------------------\n"


def test_llamaindex_chat_text_qa_prompt_with_metadata_lines() -> None:
    found = read([("system", LI_SYSTEM), ("user", LI_TEXT_QA.format(context_str=llamaindex_nodes(DOCS),
                                                                      query_str=QUESTION))])
    assert (found.name, found.passages, found.question) == ("llamaindex-text-qa", DOCS, QUESTION)


def test_llamaindex_text_qa_of_a_client_that_strips_the_trailing_space() -> None:
    text = LI_TEXT_QA.format(context_str=format_docs(DOCS), query_str=QUESTION).strip()
    assert read([("user", text)]).passages == DOCS


def test_llamaindex_context_chat_engine_system_prompt() -> None:
    system = LI_CONTEXT_CHAT.format(context_str=llamaindex_nodes(DOCS)) + "You are a museum guide."
    found = read([("system", system), ("user", QUESTION)])
    assert found.name == "llamaindex-context-chat" and found.passages == DOCS and found.question is None


def test_llamaindex_refine_prompts_keep_the_existing_answer() -> None:
    # llama-index-core 0.14.25, prompts/default_prompts.py DEFAULT_REFINE_PROMPT_TMPL.
    refine = ("The original query is as follows: {query_str}\nWe have provided an existing answer: {existing_answer}\n"
              "We have the opportunity to refine the existing answer (only if needed) with some more context below.\n"
              "------------\n{context_msg}\n------------\nGiven the new context, refine the original answer to "
              "better answer the query. If the context isn't useful, return the original answer.\nRefined Answer: ")
    found = read([("user", refine.format(query_str=QUESTION, existing_answer="Gustave Eiffel.",
                                         context_msg=format_docs(DOCS[1:])))])
    assert found.name == "llamaindex-refine" and found.question == QUESTION
    assert found.passages == (*DOCS[1:], "Gustave Eiffel.")


def test_llamaindex_condense_plus_context_system_prompt() -> None:
    # llama-index-core 0.14.25, chat_engine/condense_plus_context.py DEFAULT_CONTEXT_PROMPT_TEMPLATE.
    template = """
  The following is a friendly conversation between a user and an AI assistant.
  The assistant is talkative and provides lots of specific details from its context.
  If the assistant does not know the answer to a question, it truthfully says it
  does not know.

  Here are the relevant documents for the context:

  {context_str}

  Instruction: Based on the above documents, provide a detailed answer for the user question below.
  Answer "don't know" if not present in the document.
  """
    found = read([("system", template.format(context_str=format_docs(DOCS))), ("user", QUESTION)])
    assert found.name == "llamaindex-condense-plus-context" and found.passages == DOCS


# ------------------------------------------------------------------------------- Haystack 2

def haystack_rendered(docs: tuple[str, ...], question: str) -> str:
    """Haystack 2.29.0 documentation (docs-website/docs/overview/migration.mdx), the RAG
    PromptBuilder template, rendered as Jinja2 renders it (no trim_blocks): each document after
    "\\n    ", followed by "\\n"."""
    body = "".join(f"\n    {d}\n" for d in docs)
    return (f"\nGiven the following information, answer the question.\n\nContext:\n{body}\n\n"
            f"Question: {question}\nAnswer:\n")


def test_haystack_prompt_builder_rag_template() -> None:
    found = read([("user", haystack_rendered(DOCS, QUESTION))])
    assert found.name == "haystack-rag" and found.question == QUESTION
    # A document's own line breaks stay; documents split where the loop put them.
    assert found.passages == DOCS


def test_haystack_generator_page_template_without_answer_line() -> None:
    text = haystack_rendered(DOCS, QUESTION + "?").removesuffix("Answer:\n")
    assert read([("user", text)]).name == "haystack-rag-generator"


# ------------------------------------------------------------------------------- plain layouts

@pytest.mark.parametrize("text", [
    f"Context: {DOCS[1]}\nQuestion: {QUESTION}",
    f"Use the context below.\n\n**Context:**\n{format_docs(DOCS)}\n\n**Question:** {QUESTION}\nAnswer:",
    f"## Context\n{format_docs(DOCS)}\n\n## Question\n{QUESTION}",
    f"Question: {QUESTION}\n\nContext:\n{format_docs(DOCS)}\n\nAnswer:",
    "".join(f"Document {i + 1}: {d}\n" for i, d in enumerate(DOCS)) + f"\nQuestion: {QUESTION}\nAnswer:",
    "Sources:\n" + "".join(f"[{i + 1}] {d}\n" for i, d in enumerate(DOCS)) + f"Query: {QUESTION}",
])
def test_plain_labelled_layouts(text: str) -> None:
    found = read([("user", text)])
    assert found.name == "plain-labels" and found.question == QUESTION
    assert all(p in DOCS or p in DOCS[0].split("\n") for p in found.passages), found.passages


@pytest.mark.parametrize("text", [
    f"Answer from the information below.\n-----\n{format_docs(DOCS)}\n-----\n{QUESTION}",
    f"Here are the retrieved documents:\n=========\n{format_docs(DOCS)}\n=========\nQuestion: {QUESTION}",
    f"<context>\n{format_docs(DOCS)}\n</context>\n\n{QUESTION}",
])
def test_plain_delimited_layouts(text: str) -> None:
    found = read([("user", text)])
    assert found.name == "plain-delimited" and found.question == QUESTION and found.passages == DOCS


def test_tagged_documents_inside_a_context_block_in_the_system_message() -> None:
    system = "Answer with the documents.\n<documents>" + "".join(
        f'<document index="{i}"><source>doc{i}.txt</source><document_content>{d}</document_content></document>'
        for i, d in enumerate(DOCS)) + "</documents>"
    found = read([("system", system), ("user", QUESTION)])
    assert found.name == "plain-delimited" and len(found.passages) == 3
    assert all(d.split("\n")[0] in p for d, p in zip(DOCS, found.passages, strict=True))


# ------------------------------------------------------------------------------- ordinary chat

ORDINARY = [
    "What is the capital of France?",
    "In this context, what does 'bank' mean?",
    "Context: I'm a teacher and my students are bored. Any ideas?",
    "Can you give me some context on the French Revolution?",
    "Question: why is the sky blue?",
    "Here's my code:\n```\nprint(1)\n```\nWhy does it print 1?\n\nContext: it runs on Python 3.12.",
    "My notes\n-----\nbuy milk\n-----\nthanks",
    "Please answer the question below.\nQuestion: what is 2+2?",
    "Summarize our conversation so far.",
    "Dear team,\n\nThe meeting is moved to 3pm.\n\nBest,\nAnna\n\n-----\nSent from my phone",
    "Write a concise summary of the French Revolution.",
    "Use the following pieces of retrieved context to answer the question.",
    "[1] is my first point, [2] my second. Which is better?",
    "Document 3: the budget. Can you draft it?",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_chat_is_not_read_as_a_template(text: str) -> None:
    assert recognise([("user", text)], BUILTIN) is None


@pytest.mark.parametrize("system", [
    "You are ACME's support bot.\nContext: the user is on the premium plan.",
    "You are a helpful assistant. Be concise.",
    "Rules:\n[1] Be polite.\n[2] Be brief.",
])
def test_ordinary_system_prompts_are_not_context(system: str) -> None:
    assert recognise([("system", system), ("user", "How do I reset my password?")], BUILTIN) is None


def test_a_template_needs_its_whole_text_not_a_part_of_it() -> None:
    text = LC_RAG_PROMPT.format(question=QUESTION, context=DOCS[0]).replace("Use three sentences", "Use two sentences")
    found = recognise([("user", text)], BUILTIN)
    # Not LangChain's prompt any more; its Question:/Context: labels still make a labelled layout.
    assert found is not None and found.name == "plain-labels"


# ------------------------------------------------------------------------------- splitting

def test_llamaindex_metadata_opens_a_node_and_is_left_out() -> None:
    text = "file_path: a.txt\n\nPara one.\n\nPara two.\n\nfile_path: b.txt\npage_label: 2\n\nOther."
    assert passages.split(text, "documents") == ["Para one.\n\nPara two.", "Other."]


def test_a_record_of_fields_is_content_not_metadata() -> None:
    record = "name: Joe's Pizza\ncity: Boston\n\nsource: yelp\nrating: 4.5"
    assert passages.split(record, "documents") == ["name: Joe's Pizza\ncity: Boston", "source: yelp\nrating: 4.5"]


def test_numbered_documents_split_at_their_markers_in_order() -> None:
    text = "Document 1: alpha [2] beta\nDocument 2: gamma\nDocument 4: delta"
    assert passages.split(text, "documents") == ["alpha [2] beta", "gamma\nDocument 4: delta"]


# ------------------------------------------------------------------------------- own templates

def test_an_own_template_reads_its_slots() -> None:
    template = Template(name="acme", text="Manuals:\n{context}\n\nCustomer asks: {question}")
    slots = template.read("Manuals:\nReset with the red button.\n\nCustomer asks: How do I reset?")
    assert slots == {"context": "Reset with the red button.", "question": "How do I reset?"}
    assert template.read("Customer asks: How do I reset?") is None


@pytest.mark.parametrize(("text", "problem"), [
    ("Just {question}", "has no {context} slot"),
    ("{context}{question}", "need literal text between them"),
    ("Docs: {context} and {context}", "appears 2 times"),
    ("Docs: {context} {docs}", "unknown slot {docs}"),
    ("Docs: {context} Q: {question} }", "single '}'"),
    ("Docs:\n{context}", "needs a {question} slot"),
    ("{context} the {question}", "too short to tell the template"),  # round 4, CF2
    ("{context} and {question}", "too short to tell the template"),
    ("{context}\nQuestion {question}", "too short to tell the template"),
    ("{context} -- {question}", "too short to tell the template"),
])
def test_an_unreadable_own_template_is_refused_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(TemplateError, match=problem.replace("{", r"\{").replace("}", r"\}")):
        Template(name="bad", text=text)


@pytest.mark.parametrize("text", ["Docs:\n{context}\n\nQuestion: {question}", "Q: {question}\nKB: {context}",
                                  "Here are our manuals {context} now answer {question}"])
def test_an_own_template_with_labels_or_sentences_is_accepted(text: str) -> None:
    assert Template(name="ok", text=text).slots


# ------------------------------------------------------------------------------- code and sign-offs

FENCED = [
    "Does this prompt builder look right?\n\n```python\nprompt = f\"\"\"<context>\n{docs}\n</context>\n\n"
    "Question: {q}\"\"\"\n```\nShould the question go first?",
    "```\nContext: The tower was completed in 1925.\nQuestion: When was it completed?\n```\nIs this a good eval item?",
    "~~~yaml\ncontext:\n  documents: ./docs\n~~~\nQuestion: is this valid YAML?",
    "Why no re-render?\n```jsx\n<ThemeContext.Provider value={t}>\n<App/>\n</ThemeContext.Provider>\n",  # unclosed
]


@pytest.mark.parametrize("text", FENCED)
def test_nothing_inside_a_code_fence_is_read(text: str) -> None:
    assert recognise([("user", text)], BUILTIN) is None


def test_a_fenced_block_inside_a_context_section_stays_in_it() -> None:
    text = "Context:\nTo list files run:\n```\nls -la\n```\n\nQuestion: How do I list files?"
    found = recognise([("user", text)], BUILTIN)
    assert found is not None and "ls -la" in "\n".join(found.passages) and found.question == "How do I list files?"


def test_the_delimited_reader_takes_the_side_with_words_of_its_own_as_the_request() -> None:
    text = "Please make the text below more polite:\n-----\nSend me the report now.\n-----\nThanks!"
    found = recognise([("user", text)], BUILTIN)
    assert found is not None and found.question == "Please make the text below more polite:"
    asked = "Use the text below.\n-----\nThe shop opens at nine.\n-----\nWhen does it open?"
    found = recognise([("user", asked)], BUILTIN)
    assert found is not None and found.question == "When does it open?"


def test_a_hostile_message_that_repeats_a_templates_words_stays_cheap() -> None:
    text = "Context information is below.\n" + "---------------------\nQuery: x\n" * 20_000 + "Answer: "
    # Found or not, the answer comes back (bounded tries per slot, no regex backtracking).
    recognise([("user", text)], BUILTIN)
