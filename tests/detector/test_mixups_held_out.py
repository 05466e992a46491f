"""The fact check on a seeded held-out sample of the mix-up generator (bench/mixups.py), not on
hand-picked sentences.

``data/mixups_held_out.json`` is ``python -m bench.mixups --split held-out --per-kind 10
--write-sample ...``: wrong answers and faithful rewordings written by rule from contexts of the
dev parts (RAGTruth's odd-source_id dev part, HaluEval's dev fold) in the held-out half, with the
held-out seed; the rules were built on the other half. Per kind of mix-up at least 80% must be
flagged on the changed words, and at most 10% of each kind of faithful rewording flagged at all
(the targets of the bench). Kinds that miss the target are xfailed with the reason, strictly: a
fix makes them pass and must lift the mark.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.mixups import load_by_kind
from truthlens.detector.facts import unsupported_facts

SAMPLE = Path(__file__).parent / "data" / "mixups_held_out.json"
RECALL = 0.8
FALSE_ALARMS = 0.1

KNOWN_GAPS = {
    "comparison reversed": "an opposite word is not judged where the answer also holds its opposite elsewhere ('2 "
    "million less people ... more families') or two context clauses fit it equally; on the bench's 200 held-out "
    "cases 91% are caught, on these 10, 6",
    "one-name answer": "a one-name answer is judged by its question's focus, what the context calls the name and "
    "the kind of name asked for (facts/short_answers/focus.py, answer_types.py, name_kinds.py) and by a learned fit "
    "of the context's names to the question (answer_fit.py), but HaluEval's questions hop over two facts, and a "
    "wrong name of the asked kind, or one the context never describes, often passes (on these 10, 7; held-out "
    "through the detector, 164 cases: 78.0% caught, 9.1% of the right names flagged; 72.6% and 10.4% before the fit)",
}
KINDS = load_by_kind(SAMPLE)
WRONG = [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[k])) if k in KNOWN_GAPS else k
         for k, cases in KINDS.items() if cases[0].wrong]
FAITHFUL = [k for k, cases in KINDS.items() if not cases[0].wrong]


def test_the_sample_holds_every_kind_the_generator_writes() -> None:
    assert len(WRONG) >= 10 and len(FAITHFUL) >= 9, sorted(KINDS)
    assert all(len(cases) >= 10 for cases in KINDS.values()), {k: len(v) for k, v in KINDS.items()}


@pytest.mark.parametrize("kind", WRONG)
def test_each_kind_of_mix_up_is_flagged_on_the_changed_words(kind: str) -> None:
    cases = KINDS[kind]
    caught = [c for c in cases if any(f.start < c.end and c.start < f.end
                                      for f in unsupported_facts(c.answer, c.context, c.question))]
    missed = [c.answer[max(0, c.start - 40):c.end + 20] for c in cases if c not in caught]
    assert len(caught) / len(cases) >= RECALL, missed


@pytest.mark.parametrize("kind", FAITHFUL)
def test_faithful_rewordings_are_seldom_flagged(kind: str) -> None:
    cases = KINDS[kind]
    flagged = [(c.answer, unsupported_facts(c.answer, c.context, c.question)) for c in cases]
    flagged = [(a, f) for a, f in flagged if f]
    assert len(flagged) / len(cases) <= FALSE_ALARMS, flagged
