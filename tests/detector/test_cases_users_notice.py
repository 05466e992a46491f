"""The errors users notice first, through the shipped detector with its shipped defaults.

Real: the shipped ONNX model in ONNX Runtime, the sentence embedder, the fact check and the
learned verdict from the model's manifest; nothing is scripted. Each wrong answer is a real
sentence shape (a role swap in the passive voice, after a possessive, as a bare surname; a
reversed comparison; a dropped negation) and must be detected with a span on the error and its
reason; its faithful twin over the same context must come back clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shipped_inputs import APOLLO_CONTEXT, APOLLO_QUESTION

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import DetectionInput, DetectorSettings

AUSTRALIA = "Canberra is the capital of Australia. Sydney is the largest city in Australia."
PLANETS = (
    "Jupiter is the largest planet in the Solar System. Jupiter is larger than Saturn, and Saturn is "
    "larger than Uranus."
)
LABEL = "The drug is not approved for use in children under 12. Patients should take each dose with food."

CASES = [
    # (context, question, wrong answer, the flagged text, its reason, faithful twin)
    (APOLLO_CONTEXT, APOLLO_QUESTION, "Columbia was flown by Buzz Aldrin while Armstrong and Collins landed the Eagle.",
     "Buzz Aldrin", "misattributed_entity",
     "Columbia was flown by Michael Collins while Armstrong and Aldrin landed the Eagle."),
    pytest.param(
        APOLLO_CONTEXT, APOLLO_QUESTION, "Aldrin stayed in lunar orbit aboard Columbia.", "Aldrin",
        "misattributed_entity", "Collins stayed in lunar orbit aboard Columbia.",
        marks=pytest.mark.xfail(
            strict=True,
            reason="known gap (README, Known limitations): the swap is flagged on 'Aldrin', but the shipped "
            "model scores the faithful paraphrase ('stayed ... aboard' for 'flew ... alone in') 0.81 on every "
            "word, so the twin is flagged too",
        ),
    ),
    (AUSTRALIA, "What is the capital of Australia?", "Australia's capital is Sydney.", "Sydney",
     "misattributed_entity", "Australia's capital is Canberra."),
    (PLANETS, "Which is larger, Jupiter or Saturn?", "Saturn is larger than Jupiter.", "larger than",
     "contradicted_relation", "Saturn is smaller than Jupiter."),
    (LABEL, "Can children under 12 use the drug?", "The drug is approved for use in children under 12.",
     "The drug is approved for use in children under 12", "contradicted_relation",
     "No, the drug is not approved for use in children under 12."),
]


@pytest.mark.parametrize(("context", "question", "wrong", "text", "reason", "faithful"), CASES)
async def test_the_error_is_detected_on_its_words_and_the_faithful_twin_is_clean(
    shipped_model_dir: Path, context: str, question: str, wrong: str, text: str, reason: str, faithful: str
) -> None:
    engine = create_detector(DetectorSettings(model_dir=str(shipped_model_dir), intra_op_threads=1))
    try:
        flagged = await engine.detect(DetectionInput([context], question, wrong), threshold=0.5)
        clean = await engine.detect(DetectionInput([context], question, faithful), threshold=0.5)
    finally:
        await engine.close()
    assert flagged.status == "detected", flagged
    assert (text, reason) in [(s.text, s.reason) for s in flagged.spans], flagged.spans
    assert clean.status == "clean", clean
