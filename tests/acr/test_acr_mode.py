"""ACR mode end to end over real HTTP with the real detector and embedder.

Scripted: only the upstream LLM (truthlens.testing.upstream), which answers the agents' prompts
by their ``[acr:<task>]`` tags. Real: LLM client, ONNX embedder, ONNX detector, the math.
"""

from __future__ import annotations

import asyncio
import json
import math
import time

import pytest
from opentelemetry.trace import Tracer
from span_capture import SpanCapture

from truthlens.detector.types import Detector
from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.llm import LLMClient
from truthlens.modes.acr.mode import SOURCE_HEADER, WEIGHT_HEADER, AcrOptions, build
from truthlens.modes.base import Exchange, GroundedQuery, Services, Verdict
from truthlens.testing.retriever import scripted_retriever
from truthlens.testing.upstream import ScriptedUpstream
from truthlens.tracing import NO_TRACER

from .scenarios import QUESTION, RIGHT_PASSAGE, WRONG_PASSAGE, rules, tags_called

# The shared detector and the scripted upstream live on the session's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="session")


def _exchange(passages: tuple[str, ...], answer: str, options: AcrOptions, budget_s: float = 60.0) -> Exchange:
    messages = ({"role": "system", "content": "Context: " + " ".join(passages)},
                {"role": "user", "content": QUESTION})
    query = GroundedQuery(model="chat-model", question=QUESTION, passages=passages, messages=messages)
    return Exchange(decision="acr-route", mode="acr", threshold=0.5, options=options, query=query,
                    answers=(answer,), deadline=time.monotonic() + budget_s)


async def _run(exchange: Exchange, detector: Detector, llm: LLMClient, embedder: OnnxEmbedder,
               tracer: Tracer = NO_TRACER) -> Verdict:
    return await build().run(exchange, Services(detector=detector, llm=llm, embedder=embedder, tracer=tracer))


async def test_internal_right_context_wrong(upstream: ScriptedUpstream, llm: LLMClient,
                                            embedder: OnnxEmbedder, detector: Detector) -> None:
    upstream.set_rules(rules(
        internal={"content": "Thinking about it.\nAnswer: Canberra", "confidence": 0.9},
        triples="<s>Australia | capital | Sydney</s>",
        external={"content": "Answer: Sydney", "confidence": 0.6},
        counterfactual={"content": "Answer: Canberra"},
        fused="The capital of Australia is Canberra.",
    ))
    verdict = await _run(_exchange((WRONG_PASSAGE,), "The capital of Australia is Sydney.", AcrOptions()),
                         detector, llm, embedder)
    acr = verdict.attributes["acr"]
    assert acr["outcome"] == "resolved", acr
    assert acr["internal"]["answer"] == "Canberra" and acr["external"]["answer"] == "Sydney"
    assert acr["internal"]["mu"] > acr["external"]["mu"]
    assert verdict.headers[SOURCE_HEADER] == "internal"
    weight = float(verdict.headers[WEIGHT_HEADER])
    assert 0.5 < weight < 0.75  # leans internal, softly
    assert verdict.choices[0].text == "The capital of Australia is Canberra."
    # The fused answer was re-detected against the (wrong) context: a real verdict, not a pass.
    assert verdict.choices[0].detection.status in ("clean", "detected")
    assert verdict.choices[0].detection.score is not None
    assert verdict.iterations == len(acr["rounds"]) >= 1
    tags = tags_called(upstream.calls)
    assert tags.count("acr:fuse") == verdict.iterations
    # Internal prompts never carried the context.
    internal_calls = [c for c in upstream.calls if str(c.messages[0]["content"]).startswith("[acr:internal-")]
    assert len(internal_calls) == 4
    assert all("Sydney is the capital" not in str(c.messages) for c in internal_calls)
    assert all(c.params["n"] == 3 and c.params["temperature"] == 0.5 and c.params["top_p"] == 0.8
               and c.params["logprobs"] is True for c in internal_calls)


async def test_every_step_is_a_span_with_the_papers_quantities(
        upstream: ScriptedUpstream, llm: LLMClient, embedder: OnnxEmbedder, detector: Detector,
        spans: SpanCapture) -> None:
    upstream.set_rules(rules(
        internal={"content": "Answer: Canberra", "confidence": 0.9},
        triples="<s>Australia | capital | Sydney</s>",
        external={"content": "Answer: Sydney", "confidence": 0.6},
        counterfactual={"content": "Answer: Canberra"},
        fused="The capital of Australia is Canberra.",
    ))
    await _run(_exchange((WRONG_PASSAGE,), "Sydney.", AcrOptions()), detector, llm, embedder, spans.tracer)
    finished = spans.get_finished_spans()
    by_name = {s.name: dict(s.attributes or {}) for s in finished}
    p = "truthlens.acr"
    assert {p, f"{p}.e_agent.internal", f"{p}.e_agent.external", f"{p}.k_agent.stability",
            f"{p}.k_agent.round", f"{p}.k_agent.fuse"} <= set(by_name)
    for step in (f"{p}.e_agent.internal", f"{p}.e_agent.external"):
        assert {f"{p}.mu", f"{p}.sigma"} <= set(by_name[step])
    assert {f"{p}.{k}" for k in ("mu_int", "sigma_int", "mu_ext", "sigma_ext", "i_c", "i_s", "w",
                                 "delta_u_prev")} <= set(by_name[f"{p}.k_agent.round"])
    assert by_name[f"{p}.k_agent.stability"][f"{p}.delta_u"] == 1.0
    assert by_name[p][f"{p}.source"] == "internal"
    # Every step is in one trace under the mode's span, the LLM calls included.
    root = next(s for s in finished if s.name == p)
    assert {s.context.trace_id for s in finished} == {root.context.trace_id}
    chats = [s for s in finished if s.name == "chat chat-model"]
    assert chats and all(s.attributes["gen_ai.request.model"] == "chat-model" for s in chats)  # type: ignore[index]


async def test_context_right_internal_wrong(upstream: ScriptedUpstream, llm: LLMClient,
                                            embedder: OnnxEmbedder, detector: Detector) -> None:
    upstream.set_rules(rules(
        # The model's memory wavers (8 × Sydney, 4 × Canberra) and is unsure.
        internal={"contents": ["Answer: Sydney", "Answer: Sydney", "Answer: Canberra"], "cycle": True,
                  "confidence": 0.55},
        triples="<s>Australia | capital | Canberra</s>",
        external={"content": "Answer: Canberra", "confidence": 0.95},
        counterfactual={"content": "Answer: Canberra"},
        fused="The capital of Australia is Canberra.",
    ))
    # The upstream followed the (right) context; its memory disagrees: a conflict to resolve.
    answer = "Canberra is the capital of Australia."
    verdict = await _run(_exchange((RIGHT_PASSAGE,), answer, AcrOptions()), detector, llm, embedder)
    acr = verdict.attributes["acr"]
    assert acr["outcome"] == "resolved", acr
    assert acr["internal"]["answer"] == "Sydney" and acr["external"]["answer"] == "Canberra"
    assert acr["internal"]["support"] == pytest.approx(8 / 12, abs=1e-3)
    assert verdict.headers[SOURCE_HEADER] == "external"
    assert float(verdict.headers[WEIGHT_HEADER]) < 0.5
    # The fused answer says what the upstream already said: the answer stands, unrewritten.
    assert verdict.choices[0].text is None and not verdict.rewritten
    assert verdict.choices[0].detection.score is not None
    assert "acr:fuse" in tags_called(upstream.calls)


async def test_agreement_exits_early_and_keeps_the_answer(upstream: ScriptedUpstream, llm: LLMClient,
                                                          embedder: OnnxEmbedder, detector: Detector) -> None:
    upstream.set_rules(rules(
        internal={"content": "Answer: Canberra", "confidence": 0.9},
        triples="<s>Australia | capital | Canberra</s>",
        external={"content": "Answer: Canberra", "confidence": 0.9},
        counterfactual={"content": "Answer: Canberra"},
        fused="must not be asked",
    ))
    answer = "The capital of Australia is Canberra."
    verdict = await _run(_exchange((RIGHT_PASSAGE,), answer, AcrOptions()), detector, llm, embedder)
    assert verdict.headers[SOURCE_HEADER] == "agreement"
    assert verdict.choices[0].text is None and not verdict.rewritten
    assert verdict.iterations == 0
    tags = set(tags_called(upstream.calls))
    assert not tags & {"acr:perturb", "acr:counterfactual-answer", "acr:fuse"}
    assert verdict.choices[0].detection.score is not None


async def test_retriever_adds_evidence_in_a_second_round(upstream: ScriptedUpstream, llm: LLMClient,
                                                         embedder: OnnxEmbedder, detector: Detector) -> None:
    new_passage = "Official sources confirm that Canberra, not Sydney, is Australia's capital city."
    async with scripted_retriever([new_passage]) as retriever:
        upstream.set_rules(rules(
            internal={"content": "Answer: Canberra", "confidence": 0.7},
            triples="<s>Australia | capital | Sydney</s>",
            external={"content": "Answer: Sydney", "confidence": 0.7},
            # Δu_0: the external "Sydney" flips under all three counterfactuals (Δu = 1); the
            # fused "Canberra" holds under all of them (Δu = 0): stability improved.
            counterfactual={"content": "Answer: Canberra"},
            fused="The capital of Australia is Canberra.",
        ))
        # θ wide enough that this exchange counts as the uncertainty zone.
        options = AcrOptions(theta=100.0, max_rounds=3, retriever_url=retriever.url)
        verdict = await _run(_exchange((WRONG_PASSAGE,), "Sydney.", options), detector, llm, embedder)
    acr = verdict.attributes["acr"]
    rounds = acr["rounds"]
    assert rounds[0]["delta_u_before"] == 1.0 and rounds[0]["delta_u"] == 0.0
    assert rounds[0]["in_zone"] and rounds[0]["evidence_added"] == 1
    assert len(rounds) == 2 and acr["stop_reason"] == "settled"
    assert retriever.requests == [{"query": QUESTION, "exclude": [WRONG_PASSAGE]}]
    extracted_from = [c.messages[1]["content"] for c in upstream.calls
                      if str(c.messages[0]["content"]).startswith("[acr:extract-triples]")]
    assert any(new_passage in text for text in extracted_from)
    assert verdict.iterations == 2


async def test_upstream_failure_degrades_to_the_upstream_detection(
        upstream: ScriptedUpstream, llm: LLMClient, embedder: OnnxEmbedder, detector: Detector) -> None:
    upstream.set_rules([{"name": "down", "reply": {"status": 503}}])
    verdict = await _run(_exchange((RIGHT_PASSAGE,), "Canberra.", AcrOptions()), detector, llm, embedder)
    assert verdict.attributes["acr"]["outcome"] == "incomplete"
    assert "http_5xx" in verdict.attributes["acr"]["reason"]
    assert not verdict.rewritten and SOURCE_HEADER not in verdict.headers
    assert verdict.choices[0].detection.score is not None  # the upstream answer was still checked


async def test_budget_is_respected(upstream: ScriptedUpstream, llm: LLMClient,
                                   embedder: OnnxEmbedder, detector: Detector) -> None:
    # The reply never comes within the test (an hour away): only the budget can end the check.
    # (The wait's limit only keeps a regression from hanging the suite.)
    upstream.set_rules([{"name": "slow", "reply": {"content": "Answer: Canberra", "delay_s": 3600}}])
    verdict = await asyncio.wait_for(_run(_exchange((RIGHT_PASSAGE,), "Canberra.", AcrOptions(), budget_s=1.5),
                                          detector, llm, embedder), 120)
    assert upstream.calls  # it was asked, and gave up waiting
    assert verdict.attributes["acr"]["outcome"] == "incomplete"
    assert "timeout" in verdict.attributes["acr"]["reason"]
    detection = verdict.choices[0].detection
    assert (detection.status == "unavailable") == (detection.score is None)


async def test_clean_answer_that_memory_confirms_skips_the_external_agent(
        upstream: ScriptedUpstream, llm: LLMClient, embedder: OnnxEmbedder, detector: Detector) -> None:
    # The extraction's reply never comes within the test (an hour away): a check that waited for
    # it would never end (the wait's limit below only keeps that from hanging the suite).
    slow_extraction = {"name": "slow-extraction", "match": {"system_regex": r"^\[acr:extract-triples\]"},
                       "reply": {"content": "<s>Australia | capital | Canberra</s>", "delay_s": 3600}}
    upstream.set_rules([slow_extraction, *rules(
        internal={"content": "Answer: Canberra", "confidence": 0.9},
        triples="unused",
        external={"content": "Answer: Canberra", "confidence": 0.9},
        counterfactual={"content": "Answer: Canberra"},
        fused="must not be asked",
    )])
    answer = "The capital of Australia is Canberra."
    verdict = await asyncio.wait_for(_run(_exchange((RIGHT_PASSAGE,), answer, AcrOptions()), detector, llm, embedder),
                                     120)
    detection = verdict.choices[0].detection
    if detection.status != "clean":
        pytest.fail(f"the shipped detector flags a faithful answer: {detection}")
    assert "timeout" not in str(verdict.attributes["acr"].get("reason", ""))  # ended by agreement, not its budget
    assert verdict.headers[SOURCE_HEADER] == "agreement" and not verdict.rewritten
    assert "external" not in verdict.attributes["acr"]
    assert "acr:external-answer" not in tags_called(upstream.calls)


def _bad_logprobs_stream(logprob: float, n: int = 3) -> str:
    """A streamed completion of ``n`` samples whose token log-probs are ``logprob`` (NaN, or above 0:
    no log-probability), as a model server with a bug sends them."""
    choices = [{"index": i, "delta": {"role": "assistant", "content": "Thinking about it.\nAnswer: Canberra"},
                "logprobs": {"content": [{"token": "Canberra", "logprob": logprob, "bytes": None, "top_logprobs": []}]},
                "finish_reason": "stop"} for i in range(n)]
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": choices}
    return f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"


@pytest.mark.parametrize("logprob", [math.nan, 5.0, math.inf])
async def test_logprobs_out_of_range_read_as_missing_and_named(upstream: ScriptedUpstream, llm: LLMClient,
                                                               embedder: OnnxEmbedder, detector: Detector,
                                                               logprob: float) -> None:
    scripted = rules(
        internal={"raw_body": _bad_logprobs_stream(logprob), "content_type": "text/event-stream"},
        triples="<s>Australia | capital | Sydney</s>",
        external={"content": "Answer: Sydney", "confidence": 0.6},
        counterfactual={"content": "Answer: Canberra"},
        fused="The capital of Australia is Canberra.",
    )
    upstream.set_rules(scripted)
    verdict = await _run(_exchange((WRONG_PASSAGE,), "The capital of Australia is Sydney.", AcrOptions()),
                         detector, llm, embedder)
    acr = verdict.attributes["acr"]
    # Not a mode failure: the samples count as samples without log-probs, and the verdict says so.
    assert acr["outcome"] == "resolved", acr
    assert "bad_logprobs" in acr["fallbacks"] and acr["confidence_source"] == "agreement"
    assert "out of range" in acr["confidence_reason"]
    assert acr["internal"]["answer"] == "Canberra" and 0.0 < acr["internal"]["mu"] < 1.0
    assert verdict.choices[0].detection.score is not None
