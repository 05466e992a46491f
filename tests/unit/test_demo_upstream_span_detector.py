"""``truthlens upstream --demo`` serves the generative span detector of the llm-detector and cascade
examples (their port 8001) as well as the demo's answers.

Scripted: the upstream and its span judge (a deterministic rule, not a model). Real: the llm
detector backend's client, its prompt and strict JSON schema, HTTP."""

from __future__ import annotations

import asyncio

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import DetectionInput, DetectorSettings, LlmSettings
from truthlens.llm import Endpoint
from truthlens.starter import DEMO_SCRIPT
from truthlens.testing.script import load_script
from truthlens.testing.upstream import ScriptedUpstream

PASSAGE = ("The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the engineering "
           "company of Gustave Eiffel and completed in 1889 as the entrance arch to the World's Fair.")
QUESTION = "Who designed the Eiffel Tower?"  # a question the demo script answers on its own rule too


async def _check(answer: str) -> tuple[str, list[str], list[str]]:
    async with ScriptedUpstream(load_script(DEMO_SCRIPT)) as up:
        endpoint = Endpoint(base_url=up.base_url, timeout_s=10, max_retries=0, served_model="span-detector")
        detector = create_detector(DetectorSettings(backend="llm",
                                                    llm=LlmSettings(model="span-detector", endpoint=endpoint)))
        try:
            verdict = await detector.detect(DetectionInput(context=[PASSAGE], question=QUESTION, answer=answer), threshold=0.5)
        finally:
            await detector.close()
        return verdict.status, [answer[s.start:s.end] for s in verdict.spans], [c.rule for c in up.calls]


def test_the_demo_script_answers_span_detection_with_the_judge() -> None:
    status, spans, rules = asyncio.run(_check("The Eiffel Tower was designed by Albert Speer in 1925."))
    assert rules == ["span-detector"]  # not the plain "hallucinated" answer its prompt also quotes
    assert status == "detected" and spans == ["Albert Speer", "1925"]


def test_a_grounded_answer_is_clean() -> None:
    status, spans, _ = asyncio.run(_check("It was designed by the engineering company of Gustave Eiffel."))
    assert (status, spans) == ("clean", [])
