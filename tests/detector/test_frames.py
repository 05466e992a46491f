"""The frame of a short answer's name ("The answer is", "It was") weighs no more than the name.

Unit tests of :func:`truthlens.detector.facts.short_answers.frames.frames` and of the fusion cap,
then the shipped detector (real ONNX Runtime, the shipped model) on the one-name answers of the
committed held-out mix-up sample: whatever it flags there, it never flags a frame alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.mixups import load_by_kind
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.facts import check_facts
from truthlens.detector.fusion import as_what_it_frames
from truthlens.detector.types import DetectionInput

CONTEXT = ["Jennifer Kent wrote and directed The Babadook. Buzz Aldrin walked on the Moon in 1969."]
SAMPLE = Path(__file__).parent / "data" / "mixups_held_out.json"


def _frames(answer: str) -> list[tuple[str, str]]:
    return [(answer[a:b], answer[c:d]) for a, b, c, d in check_facts(answer, CONTEXT, "Who?").frames]


@pytest.mark.parametrize(("answer", "expected"), [
    ("The answer is Jennifer Kent.", [("The answer is", "Jennifer Kent")]),
    ("It was Buzz Aldrin.", [("It was", "Buzz Aldrin")]),
    ("Buzz Aldrin is the correct answer.", [("is the correct answer", "Buzz Aldrin")]),
    ("I think it was Jennifer Kent.", [("I think it was", "Jennifer Kent")]),
])
def test_the_words_around_a_bare_name_frame_it(answer: str, expected: list[tuple[str, str]]) -> None:
    assert _frames(answer) == expected


@pytest.mark.parametrize("answer", [
    "It was not Buzz Aldrin.",  # a negation denies what the name claims
    "It wasn't Buzz Aldrin.",
    "The director is Jennifer Kent.",  # a word of what is asked: it could be the changed one
    "Buzz Aldrin and Jennifer Kent.",  # two names
    "Jennifer Kent.",  # nothing around the name
    "Buzz Aldrin walked on the Moon in 1969, and he was the second man to do so after Armstrong.",
])
def test_no_frame_where_the_words_say_something(answer: str) -> None:
    assert _frames(answer) == []


def test_a_frame_weighs_no_more_than_its_name() -> None:
    # "The answer is Jennifer Kent." as four tokens: "The answer is", "Jennifer", "Kent", "."
    offsets = np.array([[0, 13], [14, 22], [23, 27], [27, 28]])
    probs = np.array([0.62, 0.20, 0.35, 0.01], dtype=np.float32)
    capped = as_what_it_frames(probs, offsets, [(0, 13, 14, 27)])
    assert capped.tolist() == pytest.approx([0.35, 0.20, 0.35, 0.01])
    assert probs[0] == pytest.approx(0.62)  # a copy: the model's probabilities are kept


@pytest.mark.asyncio(loop_scope="module")
async def test_the_shipped_detector_never_flags_a_frame_alone(shipped_engine: DetectorEngine) -> None:
    kinds = load_by_kind(SAMPLE)
    cases = kinds["one-name answer"] + kinds["one-name answer: the right name"]
    framed = 0
    for case in cases:
        facts = check_facts(case.answer, case.context, case.question)
        if not facts.frames:
            continue
        framed += 1
        found = await shipped_engine.detect(DetectionInput(list(case.context), case.question, case.answer), threshold=0.3)
        words = [(a, b) for a, b, _, _ in facts.frames]
        alone = [s for s in found.spans if any(a <= s.start and s.end <= b for a, b in words)]
        assert not alone, (case.answer, [(s.start, s.end, s.reason) for s in found.spans])
    assert framed >= 5, framed  # the sample holds framed answers ("It was ...", "The answer is ...")
