"""The auto mode's monitor on given detections, with the real shipped embedder.

The detections here are plain values (as the detector would return them), so each finding
can be pinned; no model output is scripted and nothing is mocked.
"""

from __future__ import annotations

from truthlens.detector.types import Detection, Span
from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.modes.escalation.monitor import assess, contradicted_spans

PASSAGES = ("The city museum opens at 9 am on weekdays. Entry costs 12 euros for adults.",
            "The museum was founded by Anna Berg in 1911.")


def _flag(answer: str, text: str, prob: float = 0.9) -> Detection:
    start = answer.index(text)
    return Detection(status="detected", score=prob, spans=(Span(start, start + len(text), text, prob),))


async def test_number_contradicting_a_passage_is_a_conflict(embedder: OnnxEmbedder) -> None:
    answer = "The museum opens at 9 am. Entry costs 20 euros for adults."
    found = await assess(answer, _flag(answer, "20 euros"), PASSAGES, embedder)
    assert found.finding == "conflict" and found.contradicted_spans == ("20 euros",)


async def test_name_contradicting_a_passage_is_a_conflict(embedder: OnnxEmbedder) -> None:
    answer = "The museum was founded by Carl Lund in 1911."
    assert await contradicted_spans(answer, _flag(answer, "Carl Lund"), PASSAGES, embedder) == ["Carl Lund"]


async def test_unsupported_addition_is_only_flagged(embedder: OnnxEmbedder) -> None:
    answer = "The museum opens at 9 am on weekdays and has a rooftop cafe with free coffee."
    found = await assess(answer, _flag(answer, "rooftop cafe with free coffee"), PASSAGES, embedder)
    assert found.finding == "flagged" and found.contradicted_spans == ()


async def test_clean_and_unavailable(embedder: OnnxEmbedder) -> None:
    answer = "The museum opens at 9 am on weekdays."
    clean = Detection(status="clean", score=0.02)
    assert (await assess(answer, clean, PASSAGES, embedder)).finding == "clean"
    missing = Detection.unavailable("timeout")
    found = await assess(answer, missing, PASSAGES, embedder)
    assert found.finding == "unavailable" and "timeout" in found.why


async def test_expert_below_k_is_a_conflict_even_when_clean(embedder: OnnxEmbedder) -> None:
    answer = "The museum opens at 9 am on weekdays."
    clean = Detection(status="clean", score=0.02)
    far = await assess(answer, clean, PASSAGES, embedder,
                       expert_answer="Penguins cannot fly but swim very well.")
    assert far.finding == "conflict" and far.expert_similarity is not None and far.expert_similarity < 0.4
    near = await assess(answer, clean, PASSAGES, embedder, expert_answer="It opens at 9 in the morning.")
    assert near.finding == "clean" and near.expert_similarity is not None and near.expert_similarity >= 0.4
