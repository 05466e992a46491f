"""Evidence gating with the real shipped embedder (nothing scripted)."""

from __future__ import annotations

import pytest

from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.evidence.gating import EvidenceSettings, gate, gate_value
from truthlens.modes.base import GroundedQuery

QUESTION = "When was the Eiffel Tower completed?"
ANSWERING = "The Eiffel Tower was completed in March 1889 as the entrance arch to the World's Fair."
RELATED = "The Eiffel Tower is repainted roughly every seven years to protect it from rust."
UNRELATED = [
    "Ibuprofen is a common painkiller; adults usually take 200 to 400 mg.",
    "The tenant may not keep pets other than fish without the landlord's consent.",
    "Mars has two small moons, Phobos and Deimos.",
]


def _query(passages: list[str]) -> GroundedQuery:
    return GroundedQuery(model="m", question=QUESTION, passages=tuple(passages),
                         messages=({"role": "user", "content": QUESTION},))


async def test_drop_keeps_relevant_passages_in_document_order(embedder: OnnxEmbedder) -> None:
    passages = [UNRELATED[0], ANSWERING, UNRELATED[1], RELATED, UNRELATED[2]]
    gated = await gate(_query(passages), EvidenceSettings(), embedder)
    assert gated.query.passages == (ANSWERING, RELATED)
    assert gated.kept == (1, 3)
    assert set(gated.held_back) == set(UNRELATED)
    assert len(gated.gates) == 5
    assert gated.gates[1] > 0.9 and max(gated.gates[i] for i in (0, 2, 4)) < 0.5
    assert gated.query.question == QUESTION and gated.query.model == "m"


async def test_rank_keeps_everything_best_first(embedder: OnnxEmbedder) -> None:
    passages = [UNRELATED[0], RELATED, ANSWERING]
    gated = await gate(_query(passages), EvidenceSettings(mode="rank"), embedder)
    assert gated.query.passages[0] == ANSWERING
    assert set(gated.query.passages) == set(passages)
    assert gated.held_back == ()


async def test_max_passages_caps_by_gate(embedder: OnnxEmbedder) -> None:
    passages = [RELATED, UNRELATED[0], ANSWERING]
    gated = await gate(_query(passages), EvidenceSettings(max_passages=1), embedder)
    assert gated.query.passages == (ANSWERING,)
    assert gated.held_back[0] == RELATED  # held back best first


async def test_never_drops_every_passage(embedder: OnnxEmbedder) -> None:
    gated = await gate(_query(UNRELATED), EvidenceSettings(min_gate=0.99), embedder)
    assert len(gated.query.passages) == 1
    best = max(range(3), key=lambda i: gated.gates[i])
    assert gated.query.passages == (UNRELATED[best],)


async def test_disabled_or_empty_passes_through(embedder: OnnxEmbedder) -> None:
    q = _query([UNRELATED[0]])
    gated = await gate(q, EvidenceSettings(enabled=False), embedder)
    assert gated.query is q and gated.held_back == ()
    empty = await gate(_query([]), EvidenceSettings(), embedder)
    assert empty.query.passages == () and empty.gates == ()


def test_gate_is_a_sigmoid_of_similarity() -> None:
    assert gate_value(0.25) == pytest.approx(0.5)
    assert gate_value(0.9) > 0.99 and gate_value(-0.2) < 0.01
    assert gate_value(0.3) < gate_value(0.4)


@pytest.mark.parametrize("kwargs, message", [
    ({"min_gate": 1.5}, "min_gate"), ({"max_passages": 0}, "max_passages"), ({"mode": "drop_all"}, "mode")])
def test_settings_are_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EvidenceSettings(**kwargs)  # type: ignore[arg-type]
