"""The frameworks' default prompt templates, each as the framework's own source writes it at the
version named beside it (the slots renamed: LangChain's ``{text}``/``{input}`` and LlamaIndex's
``{context_str}``/``{context_msg}``/``{query_str}``/``{existing_answer}`` become ``{context}``,
``{question}`` and ``{answer}``; Haystack's Jinja loop over ``documents`` becomes ``{context}``).

A template in a ``user`` message carries the question (or, for a summary prompt, its instruction
stands as the question); one in a ``system`` message carries only the context, and the question
is the user's last message. Which context slot text splits into which passages: see
:mod:`~truthlens.gateway.apis.context.passages`.
"""

from __future__ import annotations

from types import MappingProxyType

from truthlens.gateway.apis.context.templates import Template

_LANGCHAIN_CLASSIC = "langchain-classic 1.0.8"
_LLAMA_INDEX = "llama-index-core 0.14.25"

# Opening sentences LangChain's tutorials share between the hub RAG prompt and the system prompt
# they give create_stuff_documents_chain (the two differ in "just say" / "say").
_LC_ASSISTANT = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved "
                 "context to answer the question. ")
_LC_CONCISE = "Use three sentences maximum and keep the answer concise."
_LC_STUFF_INTRO = "Use the following pieces of context to answer "
_LC_DONT_KNOW = "If you don't know the answer, just say that you don't know, don't try to make up an answer."
_LI_DASHES = "---------------------"
_LI_QUERY = "not prior knowledge, answer the query.\nQuery: {question}\nAnswer: "
_CONCISE_SUMMARY = "Write a concise summary of the following:"

TEMPLATES: tuple[Template, ...] = (
    # ---- LangChain
    Template(
        name="langchain-rag-prompt",
        source="LangChain hub rlm/rag-prompt, as langchain's docs/docs/tutorials/rag.ipynb prints it "
               "(v0.3 documentation; one human message)",
        text=_LC_ASSISTANT + "If you don't know the answer, just say that you don't know. " + _LC_CONCISE
             + "\nQuestion: {question} \nContext: {context} \nAnswer:",
    ),
    Template(
        name="langchain-stuff-documents",
        role="system",
        source="the system prompt langchain's docs/docs/tutorials/rag.ipynb and pdf_qa.ipynb (v0.3 documentation) "
               f"give create_stuff_documents_chain / create_retrieval_chain ({_LANGCHAIN_CLASSIC}: documents "
               'joined with "\\n\\n"); the question is the human message',
        text=_LC_ASSISTANT + "If you don't know the answer, say that you don't know. " + _LC_CONCISE + "\n\n{context}",
    ),
    Template(
        name="langchain-retrieval-qa-chat",
        role="system",
        source="LangChain hub langchain-ai/retrieval-qa-chat, the prompt create_retrieval_chain's docstring "
               f"pulls ({_LANGCHAIN_CLASSIC}, langchain_classic/chains/retrieval.py)",
        text="Answer any use questions based solely on the context below:\n\n<context>\n{context}\n</context>",
    ),
    Template(
        name="langchain-retrieval-chain",
        role="system",
        source="the system prompt of langchain-classic's create_retrieval_chain examples in LangChain's v0.3 "
               "documentation (docs/docs/how_to/qa_sources.ipynb, qa_chat_history_how_to.ipynb: the hub rag-prompt's "
               '"just say that you don\'t know"; documents joined with "\\n\\n")',
        text=_LC_ASSISTANT + "If you don't know the answer, just say that you don't know. " + _LC_CONCISE
             + "\n\n{context}",
    ),
    Template(
        name="langchain-v1-rag-chain",
        role="system",
        source="LangChain v1 documentation (docs.langchain.com, langchain 1.x), the RAG tutorial's chain: the "
               "@dynamic_prompt middleware's system message given create_agent (documents joined with \"\\n\\n\")",
        text="You are a helpful assistant. Use the following context in your response:\n\n{context}",
    ),
    Template(
        name="langchain-lcel-rag",
        source="LangChain v0.2/v0.3 documentation's LCEL RAG chain (langchain-classic 1.0.8 era): "
               'ChatPromptTemplate.from_template("Answer the question based only on the following context:\\n'
               '{context}\\n\\nQuestion: {question}\\n")',
        text="Answer the question based only on the following context:\n{context}\n\nQuestion: {question}\n",
    ),
    Template(
        name="langchain-summarize-system",
        role="system",
        task="summary",
        instruction=_CONCISE_SUMMARY,
        source="LangChain v0.3 documentation, docs/docs/tutorials/summarization.ipynb: the system-only "
               'ChatPromptTemplate ("system", "Write a concise summary of the following:\\n\\n{context}")',
        text=_CONCISE_SUMMARY + "\n\n{context}",
    ),
    Template(
        name="langchain-stuff-qa",
        source=f"{_LANGCHAIN_CLASSIC}, langchain_classic/chains/question_answering/stuff_prompt.py PROMPT "
               "(RetrievalQA and load_qa_chain with a completion model)",
        text=_LC_STUFF_INTRO + "the question at the end. " + _LC_DONT_KNOW
             + "\n\n{context}\n\nQuestion: {question}\nHelpful Answer:",
    ),
    Template(
        name="langchain-stuff-qa-chat",
        role="system",
        source=f"{_LANGCHAIN_CLASSIC}, langchain_classic/chains/question_answering/stuff_prompt.py CHAT_PROMPT "
               "(RetrievalQA and load_qa_chain with a chat model)",
        text=_LC_STUFF_INTRO + "the user's question.\n" + _LC_DONT_KNOW + "\n----------------\n{context}",
    ),
    Template(
        name="langchain-summarize",
        task="summary",
        instruction=_CONCISE_SUMMARY,
        source=f"{_LANGCHAIN_CLASSIC}, langchain_classic/chains/summarize/stuff_prompt.py and map_reduce_prompt.py "
               "(load_summarize_chain 'stuff', and 'map_reduce' for each map and the reduce step)",
        text=_CONCISE_SUMMARY + '\n\n\n"{context}"\n\n\nCONCISE SUMMARY:',
    ),
    Template(
        name="langchain-summarize-refine",
        task="summary",
        instruction="Given the new context, refine the original summary.",
        source=f"{_LANGCHAIN_CLASSIC}, langchain_classic/chains/summarize/refine_prompts.py REFINE_PROMPT",
        text="Your job is to produce a final summary.\nWe have provided an existing summary up to a certain point: "
             "{answer}\nWe have the opportunity to refine the existing summary (only if needed) with some more "
             "context below.\n------------\n{context}\n------------\nGiven the new context, refine the original "
             "summary.\nIf the context isn't useful, return the original summary.",
    ),
    # ---- LlamaIndex
    Template(
        name="llamaindex-text-qa",
        source=f"{_LLAMA_INDEX}, llama_index/core/prompts/default_prompts.py DEFAULT_TEXT_QA_PROMPT_TMPL and the "
               "user message of chat_prompts.py CHAT_TEXT_QA_PROMPT (after its TEXT_QA_SYSTEM_PROMPT)",
        text=f"Context information is below.\n{_LI_DASHES}\n{{context}}\n{_LI_DASHES}\n"
             "Given the context information and " + _LI_QUERY,
    ),
    Template(
        name="llamaindex-tree-summarize",
        source=f"{_LLAMA_INDEX}, llama_index/core/prompts/default_prompts.py DEFAULT_TREE_SUMMARIZE_TMPL and "
               "chat_prompts.py CHAT_TREE_SUMMARIZE_PROMPT",
        text=f"Context information from multiple sources is below.\n{_LI_DASHES}\n{{context}}\n{_LI_DASHES}\n"
             "Given the information from multiple sources and " + _LI_QUERY,
    ),
    Template(
        name="llamaindex-refine",
        source=f"{_LLAMA_INDEX}, llama_index/core/prompts/default_prompts.py DEFAULT_REFINE_PROMPT_TMPL",
        text="The original query is as follows: {question}\nWe have provided an existing answer: {answer}\n"
             "We have the opportunity to refine the existing answer (only if needed) with some more context below.\n"
             "------------\n{context}\n------------\nGiven the new context, refine the original answer to better "
             "answer the query. If the context isn't useful, return the original answer.\nRefined Answer: ",
    ),
    Template(
        name="llamaindex-chat-refine",
        source=f"{_LLAMA_INDEX}, llama_index/core/prompts/chat_prompts.py CHAT_REFINE_PROMPT",
        text="You are an expert Q&A system that strictly operates in two modes when refining existing answers:\n"
             "1. **Rewrite** an original answer using the new context.\n"
             "2. **Repeat** the original answer if the new context isn't useful.\n"
             "Never reference the original answer or context directly in your answer.\n"
             "When in doubt, just repeat the original answer.\n"
             "New Context: {context}\nQuery: {question}\nOriginal Answer: {answer}\nNew Answer: ",
    ),
    Template(
        name="llamaindex-context-chat",
        role="system",
        source=f"{_LLAMA_INDEX}, llama_index/core/chat_engine/context.py DEFAULT_CONTEXT_TEMPLATE (ContextChatEngine; "
               "chat_engine/utils.py appends the engine's system prompt after it)",
        text="Use the context information below to assist the user.\n--------------------\n{context}\n"
             "--------------------\n{any}",
    ),
    Template(
        name="llamaindex-condense-plus-context",
        role="system",
        source=f"{_LLAMA_INDEX}, llama_index/core/chat_engine/condense_plus_context.py DEFAULT_CONTEXT_PROMPT_TEMPLATE "
               "(CondensePlusContextChatEngine; the engine's system prompt follows it)",
        text="The following is a friendly conversation between a user and an AI assistant.\n"
             "The assistant is talkative and provides lots of specific details from its context.\n"
             "If the assistant does not know the answer to a question, it truthfully says it\ndoes not know.\n\n"
             "Here are the relevant documents for the context:\n\n{context}\n\n"
             "Instruction: Based on the above documents, provide a detailed answer for the user question below.\n"
             "Answer \"don't know\" if not present in the document.\n{any}",
    ),
    # ---- Haystack 2
    Template(
        name="haystack-rag",
        separator="indented",
        source="Haystack 2.29.0 documentation, docs-website/docs/overview/migration.mdx: the RAG PromptBuilder "
               "template (documents rendered by a Jinja loop, each after a blank line and four spaces)",
        text="Given the following information, answer the question.\n\nContext:\n{context}\n\n"
             "Question: {question}\nAnswer:",
    ),
    Template(
        name="haystack-rag-generator",
        separator="indented",
        source="Haystack 2.29.0 documentation, docs-website/docs/pipeline-components/generators/openaigenerator.mdx "
               "(and the other generators' pages): the same template without the Answer: line",
        text="Given the following information, answer the question.\n\nContext:\n{context}\n\nQuestion: {question}",
    ),
    # ---- Haystack 3
    Template(
        name="haystack-get-started",
        role="system",
        source="Haystack 3.4 documentation, Get Started (docs.haystack.deepset.ai/docs/get-started): the "
               "ChatPromptBuilder's system message, documents by a Jinja loop and a trailing Question:; the "
               "question is the user message after it (and a system Answer: follows)",
        text="Given these documents, answer the question.\nDocuments:\n{context}\nQuestion:",
    ),
    Template(
        name="haystack-prompt-builder",
        source="haystack-ai 3.4.1, haystack/components/builders/prompt_builder.py PromptBuilder docstring (and "
               "core/pipeline/pipeline.py's ChatPromptBuilder example): documents by a Jinja loop",
        text="Given these documents, answer the question.\nDocuments:\n{context}\n\nQuestion: {question}\nAnswer:",
    ),
)

BY_NAME = MappingProxyType({t.name: t for t in TEMPLATES})
