"""The errors users notice first, through the shipped detector with its shipped defaults.

Real: the shipped ONNX model in ONNX Runtime, the sentence embedder, the fact check and the
learned verdict from the model's manifest; nothing is scripted. Each wrong answer is a real
sentence shape, in the several wordings people write it (a role swap in the passive voice, after a
possessive, as a bare surname, as a short answer that leaves the rest to the question; a reversed
comparison; a wrong superlative; a dropped negation), and must be detected with a span on the
error and its reason; its faithful twins over the same context must come back clean. Values
rounded or hedged the way people write them are not errors.
"""

from __future__ import annotations

import pytest
from shipped_inputs import APOLLO_CONTEXT, APOLLO_QUESTION

from truthlens.detector.calibration.probability import DEFAULT_THRESHOLD
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.types import Detection, DetectionInput

AUSTRALIA = "Canberra is the capital of Australia. Sydney is the largest city in Australia."
CAPITAL = "What is the capital of Australia?"
PLANETS = (
    "Jupiter is the largest planet in the Solar System. Jupiter is larger than Saturn, and Saturn is "
    "larger than Uranus."
)
LARGER = "Which is larger, Jupiter or Saturn?"
LABEL = "The drug is not approved for use in children under 12. Patients should take each dose with food."
CHILDREN = "Can children under 12 use the drug?"
AMAZON = (
    "The Amazon River in South America is the largest river by discharge volume of water in the world, "
    "and the second-longest river in the world."
)
EVEREST = (
    "Mount Everest is Earth's highest mountain above sea level. Its elevation of 8,848.86 m was most "
    "recently established in 2020 by the Chinese and Nepali authorities."
)
GREAT_WALL = (
    "The Great Wall of China is a series of fortifications in northern China. A 2012 survey found that "
    "the wall and all of its branches measure 21,196 km."
)
EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
    "It was designed by the engineering company of Gustave Eiffel and completed in 1889 as the entrance arch "
    "to the World's Fair.",
)

ALDRIN_GAP = pytest.mark.xfail(
    strict=True,
    reason="known gap (README, Known limitations): the shipped model scores this faithful paraphrase of "
    "'flew ... alone in lunar orbit' high on every word, so it is flagged",
)
WRONG = [
    # (context, question, wrong answer, the flagged text, its reason)
    (APOLLO_CONTEXT, APOLLO_QUESTION, "Columbia was flown by Buzz Aldrin while Armstrong and Collins landed the "
     "Eagle.", "Buzz Aldrin", "misattributed_entity"),
    (APOLLO_CONTEXT, APOLLO_QUESTION, "Aldrin stayed in lunar orbit aboard Columbia.", "Aldrin",
     "misattributed_entity"),
    (APOLLO_CONTEXT, APOLLO_QUESTION, "It was Buzz Aldrin.", "Buzz Aldrin", "misattributed_entity"),
    (APOLLO_CONTEXT, APOLLO_QUESTION, "Buzz Aldrin stayed aboard Columbia.", "Buzz Aldrin", "misattributed_entity"),
    (APOLLO_CONTEXT, APOLLO_QUESTION, "Buzz Aldrin.", "Buzz Aldrin", "misattributed_entity"),
    (AUSTRALIA, CAPITAL, "Australia's capital is Sydney.", "Sydney", "misattributed_entity"),
    (AUSTRALIA, CAPITAL, "The capital is Sydney.", "Sydney", "misattributed_entity"),
    (AUSTRALIA, CAPITAL, "Sydney is the capital.", "Sydney", "misattributed_entity"),
    (AUSTRALIA, CAPITAL, "It's Sydney.", "Sydney", "misattributed_entity"),
    (PLANETS, LARGER, "Saturn is larger than Jupiter.", "larger than", "contradicted_relation"),
    (PLANETS, LARGER, "Saturn is the larger of the two.", "larger", "contradicted_relation"),
    (PLANETS, LARGER, "Saturn is larger.", "larger", "contradicted_relation"),
    (PLANETS, "How does Saturn compare?", "Saturn is larger than Jupiter but smaller than Uranus.", "smaller than",
     "contradicted_relation"),
    (LABEL, CHILDREN, "The drug is approved for use in children under 12.",
     "The drug is approved for use in children under 12", "contradicted_relation"),
    (LABEL, CHILDREN, "Yes, it is approved for children under 12.", "it is approved for children under 12",
     "contradicted_relation"),
    (AMAZON, "How long is the Amazon?", "The Amazon is the longest river in the world.", "longest",
     "contradicted_relation"),
    (AMAZON, "How long is the Amazon?", "At about 6,400 km, the Amazon is the world's longest river.", "longest",
     "contradicted_relation"),
    (EVEREST, "How high is Mount Everest?", "Mount Everest is 9,849 meters high.", "9,849 meters",
     "unsupported_number"),
    (GREAT_WALL, "How long is the Great Wall?", "The Great Wall is about 31,000 km long.", "31,000 km",
     "unsupported_number"),
]

FAITHFUL = [
    (APOLLO_CONTEXT, APOLLO_QUESTION, "Columbia was flown by Michael Collins while Armstrong and Aldrin landed the "
     "Eagle."),
    pytest.param(APOLLO_CONTEXT, APOLLO_QUESTION, "Collins stayed in lunar orbit aboard Columbia.", marks=ALDRIN_GAP),
    (APOLLO_CONTEXT, APOLLO_QUESTION, "It was Michael Collins."),
    (APOLLO_CONTEXT, APOLLO_QUESTION, "Michael Collins."),
    (AUSTRALIA, CAPITAL, "Australia's capital is Canberra."),
    (AUSTRALIA, CAPITAL, "The capital is Canberra."),
    (AUSTRALIA, CAPITAL, "Canberra is the capital."),
    (AUSTRALIA, CAPITAL, "It's Canberra."),
    (PLANETS, LARGER, "Saturn is smaller than Jupiter."),
    (PLANETS, LARGER, "Jupiter is the larger of the two."),
    (PLANETS, LARGER, "Jupiter is larger."),
    (PLANETS, "How does Saturn compare?", "Saturn is smaller than Jupiter but larger than Uranus."),
    (LABEL, CHILDREN, "No, the drug is not approved for use in children under 12."),
    (LABEL, CHILDREN, "No, it is not approved for children under 12."),
    (LABEL, CHILDREN, "No. It is not approved for children under 12."),
    (AMAZON, "How long is the Amazon?", "The Amazon is the second-longest river in the world."),
    (AMAZON, "How long is the Amazon?", "It is the world's second-longest river."),
    (EVEREST, "How high is Mount Everest?", "Mount Everest is 8,849 meters high."),
    (EVEREST, "How high is Mount Everest?", "Mount Everest is 8,849 m tall."),
    (EVEREST, "How high is Mount Everest?", "Everest rises about 8,850 metres above sea level."),
    (GREAT_WALL, "How long is the Great Wall?", "The Great Wall is about 21,000 km long."),
    (GREAT_WALL, "How long is the Great Wall?", "With all its branches it measures roughly 21,000 kilometres."),
]

in_module_loop = pytest.mark.asyncio(loop_scope="module")


async def check(shipped_engine: DetectorEngine, context: str | tuple[str, ...], question: str, answer: str) -> Detection:
    passages = [context] if isinstance(context, str) else list(context)
    return await shipped_engine.detect(DetectionInput(passages, question, answer), threshold=DEFAULT_THRESHOLD)


@in_module_loop
@pytest.mark.parametrize(("context", "question", "wrong", "text", "reason"), WRONG)
async def test_the_error_is_detected_on_its_words(
    shipped_engine: DetectorEngine, context: str, question: str, wrong: str, text: str, reason: str
) -> None:
    flagged = await check(shipped_engine, context, question, wrong)
    assert flagged.status == "detected", flagged
    assert (text, reason) in [(s.text, s.reason) for s in flagged.spans], flagged.spans


@in_module_loop
@pytest.mark.parametrize(("context", "question", "faithful"), FAITHFUL)
async def test_the_faithful_answer_is_clean(shipped_engine: DetectorEngine, context: str, question: str, faithful: str) -> None:
    clean = await check(shipped_engine, context, question, faithful)
    assert clean.status == "clean", clean


@in_module_loop
async def test_spans_are_whole_words_and_explained_by_the_sentence_that_speaks_of_the_claim(
    shipped_engine: DetectorEngine,
) -> None:
    answer = "The Eiffel Tower was designed by Leonardo da Vinci in 1502 and is made of solid gold."
    result = await check(shipped_engine, EIFFEL, "Who designed the Eiffel Tower?", answer)
    assert result.status == "detected", result
    for span in result.spans:  # no fragment of a word ("el" of "Eiffel")
        assert span.start == 0 or not (answer[span.start - 1].isalnum() and answer[span.start].isalnum()), span
        assert span.end == len(answer) or not (answer[span.end - 1].isalnum() and answer[span.end].isalnum()), span
    named = {s.text: s for s in result.spans}
    leonardo = named["Leonardo da Vinci"]
    assert (leonardo.reason, leonardo.passage, leonardo.context_fact) == ("unsupported_entity", 1, "Gustave Eiffel")
    assert leonardo.evidence == EIFFEL[1]
    assert named["1502"].passage == 1 and named["1502"].context_fact == "1889"


@in_module_loop
@pytest.mark.parametrize("answer", [
    "The Eiffel Tower was completed in 1925.",
    "It was finished in 1925.",
    "Completed in 1925, the tower was the entrance arch to the World's Fair.",
])
async def test_with_two_passages_the_contradicting_sentence_is_found(shipped_engine: DetectorEngine, answer: str) -> None:
    result = await check(shipped_engine, EIFFEL, "When was the Eiffel Tower completed?", answer)
    assert result.status == "detected", result
    (year,) = [s for s in result.spans if s.text == "1925"]
    assert (year.reason, year.passage, year.context_fact) == ("unsupported_date", 1, "1889"), year


@in_module_loop
@pytest.mark.parametrize("answer", [
    "It was built for the World's Fair in 1925.",
    "The tower opened at the World's Fair in 1925.",
])
async def test_a_name_with_a_possessive_inside_is_one_name(shipped_engine: DetectorEngine, answer: str) -> None:
    context = "The tower was completed in 1889 for the Exposition Universelle in Paris."
    result = await check(shipped_engine, context, "What was the tower built for?", answer)
    assert result.status == "detected", result
    names = [s.text for s in result.spans if s.reason == "unsupported_entity"]
    assert names == ["World's Fair"], result.spans


@in_module_loop
async def test_an_explanation_of_a_short_answer_comes_from_its_question(shipped_engine: DetectorEngine) -> None:
    """ "It was Buzz Aldrin." says nothing of its own; with the question's words it is the claim
    "Buzz Aldrin stayed in lunar orbit aboard Columbia", and the context says that of Collins."""
    result = await check(shipped_engine, APOLLO_CONTEXT, APOLLO_QUESTION, "It was Buzz Aldrin.")
    (span,) = [s for s in result.spans if s.text == "Buzz Aldrin"]
    assert span.context_fact == "Michael Collins", span
    assert span.evidence is not None and span.evidence.startswith("Michael Collins flew"), span
