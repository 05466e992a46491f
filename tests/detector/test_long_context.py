"""Long inputs with the shipped model: ~20k tokens of context, the wrong fact at the END of the answer.

Real model (the shipped default detector), real ONNX Runtime, real tokenizer; nothing is
scripted. A detector that right-truncates at its window would never see the end of this
answer and call it clean; ours must flag the wrong year.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from plugins.detector.encoding import TextEncoder
from plugins.detector.engine import DetectorEngine
from plugins.detector.factory import create_detector
from plugins.detector.types import DetectionInput, DetectorSettings

SYLLABLES = ("tor", "vel", "mar", "zen", "kai", "sol", "lux", "dra", "pen", "qui", "bar", "nor")
CITIES = ("Glarus", "Khulna", "Santa Fe", "Tartu", "Mombasa", "Porto", "Oulu", "Cusco")
EVIDENCE = (
    "Brightvale Instruments has its headquarters in Tartu. Brightvale Instruments opened for business in 1932. "
    "About 4,120 people work for Brightvale Instruments. The annual report of Brightvale Instruments shows "
    "sales of €812.5 million."
)
QUESTION = "Tell me about Brightvale Instruments."
WRONG = (
    "As stated in the passages, Brightvale Instruments has its headquarters in Tartu. About 4,120 people "
    "work for Brightvale Instruments. Brightvale Instruments opened for business in 1987."
)


def _filler(rng: random.Random, count: int) -> list[str]:
    passages = []
    for _ in range(count):
        name = "".join(rng.choice(SYLLABLES) for _ in range(3)).capitalize() + " Logistics"
        passages.append(
            f"{rng.choice(CITIES)} is home to the headquarters of {name}. {name} opened for business in "
            f"{rng.randint(1900, 2015)}. About {rng.randint(1000, 300000):,} people work for {name}. "
            f"Year-over-year growth at {name} was {rng.uniform(-9, 9):.1f} percent."
        )
    return passages


@pytest.fixture(scope="module")
def long_context(shipped_model_dir: Path) -> tuple[str, ...]:
    passages = _filler(random.Random(7), 400)
    passages.insert(len(passages) // 2, EVIDENCE)
    encoder = TextEncoder(shipped_model_dir / "tokenizer.json")
    tokens = sum(len(encoder.encode(p)) for p in passages)
    assert 18_000 <= tokens <= 26_000, tokens
    return tuple(passages)


async def test_wrong_fact_at_the_end_of_the_answer_is_flagged(long_context: tuple[str, ...]) -> None:
    detector = create_detector(DetectorSettings(provider="cpu"))
    assert isinstance(detector, DetectorEngine)
    result = await detector.detect(DetectionInput(long_context, QUESTION, WRONG), threshold=0.5)
    await detector.close()
    assert result.status == "detected", result
    assert result.chunks > 20  # the context really was chunked
    year = WRONG.index("1987")
    assert any(s.start <= year < s.end for s in result.spans), result.spans


async def test_short_context_baseline_separates_wrong_from_correct(shipped_model_dir: Path) -> None:
    """The same facts beside a few passages: the wrong year is flagged, the right one is not."""
    context = (EVIDENCE, *_filler(random.Random(3), 3))
    detector = create_detector(DetectorSettings(provider="cpu"))
    wrong = await detector.detect(DetectionInput(context, QUESTION, WRONG), threshold=0.5)
    right = await detector.detect(DetectionInput(context, QUESTION, WRONG.replace("1987", "1932")), threshold=0.5)
    await detector.close()
    assert wrong.status == "detected", wrong
    strongest = max(wrong.spans, key=lambda s: s.prob)
    assert "1987" in strongest.text, wrong.spans
    assert right.status == "clean" and right.spans == (), right
