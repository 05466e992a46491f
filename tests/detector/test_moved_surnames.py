"""A surname moved beside its full name: caught on generated mix-ups, left alone in real faithful answers.

The clause check reads a name as stated by a context clause when the clause holds all of its
words. A surname ("Scott", "Mr Scott") is inside the full name ("Walter Scott"), so a clause
that names the person in full and gives the surname again in another name's place ("... Walter
Scott was shot in North Charleston, Mr Scott." for "..., South Carolina.") passed as a whole.
Each context name now stands for one of the answer clause's names: the full name is the full
name's, and the surname has to be stated apart from it.

Two sets, neither hand-written:

- ``data/mixups_surnames.json``: the mix-up generator's name moves over the tuning half's
  contexts, seeds 4 to 9, kept by shape (a surname, bare or after a title, moved into a clause
  that also names the full person) before the rule (``data/make_surname_sample.py``); the fact
  check found 2 of the 16 before it.
- ``data/faithful_surnames_ragtruth.json``: real faithful summaries of RAGTruth's odd-source_id
  half (human-labelled: no hallucinated span) with a clause naming a person in full and again by
  the surname, or two people of one family ("Taylor Swift's mother, Andrea Swift"): every
  answer of that shape whose full name the article gives, one per article and name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.mixups import load
from truthlens.detector.facts import check_facts

DATA = Path(__file__).parent / "data"
RECALL = 0.75  # measured 13 of 16 with the rule (2 of 16 before it)

MOVES = load(DATA / "mixups_surnames.json")
REAL = json.loads((DATA / "faithful_surnames_ragtruth.json").read_text(encoding="utf-8"))["cases"]


def test_the_sample_is_of_its_class() -> None:
    assert len(MOVES) >= 15
    assert all(c.wrong and c.kind == "name moved between clauses" for c in MOVES)


def test_the_fact_check_flags_a_surname_moved_beside_its_full_name() -> None:
    caught = []
    for c in MOVES:
        findings = check_facts(c.answer, list(c.context), c.question).findings
        caught.append(any(f.start < c.end and c.start < f.end for f in findings))
    missed = [c.answer[max(0, c.start - 60):c.end + 20] for c, hit in zip(MOVES, caught, strict=True) if not hit]
    assert sum(caught) / len(MOVES) >= RECALL, missed


@pytest.mark.parametrize("case", REAL, ids=[f"{c['source_id']}-{c['name']}" for c in REAL])
def test_a_real_faithful_surname_beside_its_full_name_is_not_moved(case: dict[str, object]) -> None:
    context, question, answer, at = case["context"], case["question"], case["answer"], case["at"]
    assert isinstance(context, list) and isinstance(question, str) and isinstance(answer, str)
    assert isinstance(at, int) and isinstance(case["name"], str)
    end = at + len(case["name"])
    assert answer[at:end] == case["name"]
    findings = check_facts(answer, context, question).findings
    moved = [(f.text, f.check) for f in findings if f.reason == "misattributed_entity" and f.start < end and at < f.end]
    assert not moved, moved
