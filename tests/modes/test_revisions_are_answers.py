"""Standard mode ships a revision only when it answers the question and the re-check passes it.

The three non-answers a real small model (Gemma 3 270M base behind llama.cpp) gave as
"revisions", each scoring lower than the original it replaced: the refine prompt's own rules
echoed back, the original answer in quotes, and a ``"Question": ...`` JSON fragment. Real: the
shipped detector in ONNX Runtime, HTTP, the LLM client. Scripted: the upstream LLM's refine replies.
"""

from __future__ import annotations

import pytest

from truthlens.detector.types import Detector
from truthlens.modes import standard
from truthlens.modes.base import Services
from truthlens.modes.prompts import REFINE_MARKER, REFINE_SYSTEM
from truthlens.modes.revisions import why_not_an_answer
from truthlens.modes.standard import StandardOptions
from truthlens.testing.upstream import ScriptedUpstream

from .conftest import CONTEXT, QUESTION, exchange, score

in_module_loop = pytest.mark.asyncio(loop_scope="module")

WRONG = "The Eiffel Tower was completed in 1925 and is 120 metres tall."
WORSE = WRONG + " It was designed by Leonardo da Vinci and is made of solid gold."
RULES_ECHOED = ("1. Check each flagged span against the context.\n"
                "2. If the context contradicts a span, correct it with the context's facts.\n"
                "4. Keep every accurate, grounded part of the answer as it is.")
ORIGINAL_QUOTED = f'"{WRONG}"'
JSON_FRAGMENT = f'"Question": "{QUESTION}",\n"Answer": "The tower is tall."'
NON_ANSWERS = {"prompt_echo": RULES_ECHOED, "quoted_original": ORIGINAL_QUOTED, "json": JSON_FRAGMENT}
MODE = standard.build()


def shape(text: str, original: str = WRONG) -> str | None:
    return why_not_an_answer(text, original=original, question=QUESTION, passages=CONTEXT,
                             instructions=(REFINE_SYSTEM,))


@pytest.mark.parametrize(("why", "text"), NON_ANSWERS.items())
def test_the_three_non_answers_are_named(why: str, text: str) -> None:
    assert shape(text) == why


@pytest.mark.parametrize("text", [
    "The Eiffel Tower was completed in 1889 and is 330 metres tall.",
    'It was completed in 1889; the context calls it "the iron lady" and gives its height as 330 metres.',
    "The context does not state when it was completed.",
])
def test_answers_pass(text: str) -> None:
    assert shape(text) is None


def test_other_echoes_are_named() -> None:
    assert shape(QUESTION) == "question_echo"
    assert shape("   ") == "empty"
    assert shape('{"answer": "1889"}') == "json"
    assert shape(f"Revised answer: “{WRONG}”") == "quoted_original"
    long_passage = " ".join(CONTEXT)
    assert shape(long_passage) == "passage_echo"


@in_module_loop
@pytest.mark.parametrize("why", NON_ANSWERS)
async def test_a_non_answer_revision_is_never_shipped(detector: Detector, upstream: ScriptedUpstream,
                                                      services: Services, why: str) -> None:
    first = await score(detector, WRONG, threshold=0.5)
    assert first.status == "detected"
    upstream.set_rules([{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": NON_ANSWERS[why]}}])
    verdict = await MODE.run(exchange([WRONG], mode="standard", options=StandardOptions(), threshold=0.5), services)
    choice = verdict.choices[0]
    assert choice.text is None and choice.detection.status == "detected"  # the original, with its warning
    assert not verdict.rewritten
    assert verdict.attributes["standard.stop"] == (f"not_an_answer:{why}",)


@in_module_loop
async def test_a_still_flagged_improvement_is_not_shipped(detector: Detector, upstream: ScriptedUpstream,
                                                          services: Services) -> None:
    worse, wrong = await score(detector, WORSE), await score(detector, WRONG)
    assert worse.score is not None and wrong.score is not None and wrong.score < worse.score, (worse, wrong)
    threshold = wrong.score / 2  # both flagged: the revision scores lower, yet is still flagged
    upstream.set_rules([{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": WRONG}}])
    verdict = await MODE.run(exchange([WORSE], mode="standard", options=StandardOptions(max_iterations=1),
                                      threshold=threshold), services)
    choice = verdict.choices[0]
    assert choice.text is None and choice.detection.status == "detected"
    assert choice.detection.score == pytest.approx(worse.score, abs=1e-6)  # the original's own detection
    assert verdict.attributes["standard.stop"] == ("max_iterations:still_flagged",)
