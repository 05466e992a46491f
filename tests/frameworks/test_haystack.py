"""Haystack (haystack-ai 3.4.1) through the real stack: the docs page's code (the Get Started
RAG pipeline, and its prompt streamed) is checked with the control's verdict, the verdict where
the page reads it. Real: Envoy, gRPC ext_proc, the processor with the shipped detector and
decisions, the Haystack package. Scripted: the upstream."""

from __future__ import annotations

import pytest
from conftest import DOCS, QUESTION, control, require, run_page
from harness import Stack
from shipped_inputs import WRONG_FACTS

pytestmark = [pytest.mark.envoy, pytest.mark.filterwarnings("ignore::UserWarning")]


def test_the_pages_code_shows_the_controls_verdict(gateway: Stack) -> None:
    require("haystack")
    expected = control(gateway)
    assert expected == "true"
    ns = run_page("haystack", gateway)
    verdict = ns["verdict"]
    assert verdict.headers["x-truthlens-context-source"] == "template:haystack-get-started"
    assert verdict.detected == expected
    assert any(f in ns["reply"][s["start"]:s["end"]] for s in verdict.spans for f in WRONG_FACTS)
    streamed = ns["streamed_verdict"]
    assert streamed is not verdict and streamed.complete and streamed.detected == expected
    assert "".join(ns["chunks"]) == ns["streamed_reply"]


def test_the_prompt_builder_docstrings_pipeline_is_checked(gateway: Stack) -> None:
    # haystack-ai 3.4.1, components/builders/prompt_builder.py: the PromptBuilder docstring's RAG
    # template, connected to the chat generator as the docstring does (a string prompt: one user message).
    require("haystack")
    from haystack import Document, Pipeline
    from haystack.components.builders import PromptBuilder
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    from truthlens.client_verdicts import VerdictRecorder

    recorder = VerdictRecorder()
    template = """
        Given these documents, answer the question.
        Documents:
        {% for doc in documents %}
            {{ doc.content }}
        {% endfor %}

        Question: {{query}}
        Answer:
        """
    p = Pipeline()
    p.add_component("prompt_builder", PromptBuilder(template=template))
    p.add_component("llm", OpenAIChatGenerator(api_key=Secret.from_token("unused"), model="demo-model",
                                               api_base_url=gateway.base_url,
                                               http_client_kwargs={"transport": recorder.transport()}))
    p.connect("prompt_builder", "llm")
    p.run({"prompt_builder": {"documents": [Document(content=d) for d in DOCS], "query": QUESTION}})
    verdict = recorder.last
    assert verdict is not None
    assert verdict.headers["x-truthlens-context-source"] == "template:haystack-prompt-builder"
    assert verdict.detected == control(gateway)

