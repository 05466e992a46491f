"""Long inputs with the shipped model: ~20k tokens of context, the wrong fact at the END of the answer.

Real model (the shipped default detector), real ONNX Runtime, real tokenizer, real sentence
embedder; nothing is scripted. A detector that right-truncates at its window would never see
the end of this answer and call it clean; ours must flag the wrong year. With the default
``grounded`` rows the faithful answer over the same 400 distractor passages must stay clean
(``max`` across chunks flags it), also when the embedder cannot load (word-overlap ranking).
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.types import DetectionInput, DetectorSettings

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
RIGHT = WRONG.replace("1987", "1932")
# The headcount of the relevant passage, wrong and hedged ("About 61,500"): the filler passages
# state other companies' headcounts, some within 10% of it, which must not excuse it. The
# model-only checks below leave the rule-based fact check off (only the evidence passage in the
# claim's row can contradict it); the shipped defaults run with it on.
WRONG_NUMBER = RIGHT.replace("4,120", "61,500")


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
    # max across every (answer window x chunk) row: the plan that reads every chunk.
    detector = create_detector(DetectorSettings(provider="cpu", chunk_aggregation="max"))
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


in_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def grounded() -> AsyncIterator[DetectorEngine]:
    """The default settings but the model alone (no rule-based fact check)."""
    detector = create_detector(DetectorSettings(provider="cpu", evidence_checks=False))
    assert isinstance(detector, DetectorEngine)
    assert detector.settings.chunk_aggregation == "grounded" and detector.relevance.name == "embedding"
    yield detector
    await detector.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shipped_defaults() -> AsyncIterator[DetectorEngine]:
    """The detector exactly as ``truthlens serve`` builds it by default: fact check on."""
    detector = create_detector(DetectorSettings())
    assert isinstance(detector, DetectorEngine) and detector.settings.evidence_checks
    yield detector
    await detector.close()


@in_module_loop
async def test_shipped_defaults_catch_a_hedged_wrong_number_over_a_long_context(
    shipped_defaults: DetectorEngine, long_context: tuple[str, ...]
) -> None:
    """Other passages give headcounts near 61,500 (about 1,000 to 300,000 each); only one speaks of
    Brightvale Instruments, and it says about 4,120."""
    near = [p for p in long_context if any(f"About {n:,} people" in p for n in range(55_350, 67_650))]
    assert near, "the filler should hold a headcount within 10% of the wrong one"
    wrong = await shipped_defaults.detect(DetectionInput(long_context, QUESTION, WRONG_NUMBER), threshold=0.5)
    assert wrong.status == "detected", wrong
    (span,) = [s for s in wrong.spans if "61,500" in s.text]
    assert span.reason == "unsupported_number", wrong.spans


@in_module_loop
async def test_shipped_defaults_clear_the_faithful_answer_and_flag_the_wrong_year_over_a_long_context(
    shipped_defaults: DetectorEngine, long_context: tuple[str, ...]
) -> None:
    right = await shipped_defaults.detect(DetectionInput(long_context, QUESTION, RIGHT), threshold=0.5)
    assert right.status == "clean" and right.spans == (), right
    wrong = await shipped_defaults.detect(DetectionInput(long_context, QUESTION, WRONG), threshold=0.5)
    assert wrong.status == "detected", wrong
    year = WRONG.index("1987")
    assert any(s.start <= year < s.end for s in wrong.spans), wrong.spans


@in_module_loop
async def test_grounded_faithful_answer_over_long_context_is_clean(
    grounded: DetectorEngine, long_context: tuple[str, ...]
) -> None:
    result = await grounded.detect(DetectionInput(long_context, QUESTION, RIGHT), threshold=0.5)
    assert result.status == "clean" and result.spans == (), result
    # At most one row per answer sentence, not one per (window x chunk): 58 with max. Sentences
    # whose evidence lies in another one's row share it (chunks counts the rows run).
    assert 1 <= result.chunks <= 3


@in_module_loop
async def test_grounded_wrong_number_in_the_relevant_passage_is_flagged_on_the_number(
    grounded: DetectorEngine, long_context: tuple[str, ...]
) -> None:
    result = await grounded.detect(DetectionInput(long_context, QUESTION, WRONG_NUMBER), threshold=0.5)
    assert result.status == "detected", result
    start = WRONG_NUMBER.index("61,500")
    end = start + len("61,500")
    assert result.spans and all(s.start < end and start < s.end for s in result.spans), result.spans


async def test_max_reads_every_chunk_where_grounded_reads_one_row_per_sentence(long_context: tuple[str, ...]) -> None:
    """The cost side of why ``grounded`` is the default: ``max`` pairs the answer with every
    chunk (rows grow with the context; the quality side, faithful long-context answers flagged,
    is measured on real text by ``bench.chunk_aggregation`` and ``bench.detector_quality``)."""
    detector = create_detector(DetectorSettings(provider="cpu", chunk_aggregation="max", evidence_checks=False))
    result = await detector.detect(DetectionInput(long_context, QUESTION, RIGHT), threshold=0.5)
    await detector.close()
    assert result.status != "unavailable" and result.chunks > 20, result


async def test_without_the_embedder_grounded_ranks_by_word_overlap(
    long_context: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A broken embedder directory: a warning at start, then the lexical ranking still finds
    the evidence (clean faithful answer, flagged wrong number) — never a silent "clean"."""
    from truthlens.evidence import embedder

    broken = tmp_path / "embedder"
    broken.mkdir()
    (broken / "manifest.json").write_text('{"format": "truthlens-embedder/1", "max_length": 256}')
    (broken / "model.onnx").write_bytes(b"not an onnx graph")
    (broken / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(embedder, "DEFAULT_MODEL_DIR", broken)
    with caplog.at_level(logging.WARNING, logger="truthlens.detector.relevance"):
        detector = create_detector(DetectorSettings(provider="cpu", evidence_checks=False))
    assert isinstance(detector, DetectorEngine)
    assert detector.relevance.name == "lexical"
    assert "embedder could not load" in caplog.text and "word overlap" in caplog.text
    right = await detector.detect(DetectionInput(long_context, QUESTION, RIGHT), threshold=0.5)
    wrong = await detector.detect(DetectionInput(long_context, QUESTION, WRONG_NUMBER), threshold=0.5)
    await detector.close()
    assert right.status == "clean", right
    assert wrong.status == "detected" and any(s.text in "61,500" for s in wrong.spans), wrong
