"""facts/short_answers/answer_fit.py: the learned fit of a context's names to a question, and what
the fact check and fusion do with it.

Real parts: the shipped weights, the product's readings of real contexts (the seeded held-out
sample of the mix-up generator, ``data/mixups_held_out.json``: HaluEval QA dev-fold knowledge and
questions). How well the fit ranks is measured by ``python -m training.answer_fit --cv`` and the
mix-up bench, not asserted here on picked cases. No scripted parts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.mixups import load_by_kind
from truthlens.detector.facts import check_facts
from truthlens.detector.facts.clauses import context_clauses
from truthlens.detector.facts.short_answers.answer_fit import Fit, pooled, shipped
from truthlens.detector.facts.short_answers.focus import answer_shares, fit_features, fit_reading
from truthlens.detector.fusion import ANSWERED_KEEP, fused

SAMPLE = Path(__file__).parent / "data" / "mixups_held_out.json"
ONE_NAME = [c for kind, cases in load_by_kind(SAMPLE).items() if kind.startswith("one-name") for c in cases]


def test_the_shipped_weights_give_each_name_of_a_context_a_share_that_sums_to_one() -> None:
    read = 0
    for case in ONE_NAME:
        found = fit_features(case.question, context_clauses(case.context).focus)
        if len(found) < 2:
            continue
        shares = shipped().shares(found)
        assert set(shares) == set(found)
        assert sum(shares.values()) == pytest.approx(1.0) and all(0.0 < s < 1.0 for s in shares.values())
        read += 1
    assert read >= len(ONE_NAME) // 2, read  # most knowledge passages name several things


def test_names_written_two_ways_pool_their_share() -> None:
    shares = {frozenset({"barack", "obama"}): 0.3, frozenset({"barack", "hussein", "obama", "ii"}): 0.2,
              frozenset({"joe", "biden"}): 0.5}
    assert pooled(shares, frozenset({"barack", "obama"})) == pytest.approx(0.5)
    assert pooled(shares, frozenset({"joe", "biden"})) == pytest.approx(0.5)


def test_the_keys_of_a_context_are_the_same_in_every_process() -> None:
    # (a set's order changes with the interpreter's hash seed: the keys the weights were fitted on
    # must not, or a name would be read one way when fitted and another when served)
    context = ONE_NAME[0].context
    script = ("import json, sys; from truthlens.detector.facts.clauses import context_clauses; "
              "idx = context_clauses(tuple(json.loads(sys.argv[1]))).focus; "
              "print(json.dumps([[sorted(c.words), list(c.keys)] for c in idx.fit.candidates]))")
    runs = {subprocess.run([sys.executable, "-c", script, json.dumps(list(context))], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(runs) == 1
    assert json.loads(runs.pop()) == [[sorted(c.words), list(c.keys)]
                                      for c in context_clauses(context).focus.fit.candidates]


def test_the_check_flags_a_name_read_as_unlikely_and_returns_one_read_as_answered() -> None:
    answered = unlikely = 0
    for case in ONE_NAME:
        reading = fit_reading(case.answer, case.question, context_clauses(case.context).focus)
        found = check_facts(case.answer, case.context, case.question)
        assert found.answered == tuple((o.start, o.end) for o in reading.answered)
        answered += len(reading.answered)
        for o in reading.unlikely:
            unlikely += 1
            assert [f for f in found.findings if f.start < o.end and o.start < f.end], (case.answer, found)
    assert answered and unlikely, (answered, unlikely)  # both readings occur on the sample


def test_a_choice_or_a_title_is_left_to_the_rules() -> None:
    context = ("Northwind named Priya Raman its chief executive in 2019. Its chief financial officer, Tomas Ekberg, "
               "joined from a bank. Alicia Moreno runs the European business.",)
    index = context_clauses(context).focus
    assert answer_shares("It is Priya Raman.", "Who is the CEO of Northwind?", index) == []
    assert answer_shares("Tomas Ekberg.", "Who runs the European business, Priya Raman or Tomas Ekberg?", index) == []
    assert answer_shares("Tomas Ekberg.", "Who runs the European business?", index) != []


def test_a_long_answer_or_a_missing_question_is_not_read_by_the_fit() -> None:
    case = ONE_NAME[0]
    index = context_clauses(case.context).focus
    assert answer_shares(case.answer, "", index) == []
    long_answer = case.answer.rstrip(".") + " and it also went on to do many other things over the years."
    assert check_facts(long_answer, case.context, case.question).answered == ()


def test_an_answer_to_a_yes_no_question_is_not_read_by_the_fit() -> None:
    # ("Is Mourinho afraid ...?" - "No. Mourinho is not afraid ...": the question asks for no name)
    cases = load_by_kind(SAMPLE)['a "No, ..." answer']
    assert cases and all(answer_shares(c.answer, c.question, context_clauses(c.context).focus) == [] for c in cases)


def test_a_context_of_many_more_names_than_the_fit_was_fitted_on_is_left_to_the_rules() -> None:
    # (a softmax over a long article's names spreads thin: each would fall under the unlikely share)
    passages = tuple(dict.fromkeys(p for c in ONE_NAME for p in c.context))
    index = context_clauses(passages).focus
    assert len(passages) > 5 and index.fit.candidates == ()
    assert all(answer_shares(c.answer, c.question, index) == [] for c in ONE_NAME)
    assert context_clauses(ONE_NAME[0].context).focus.fit.candidates  # (one knowledge passage is read)


def test_fusion_weakens_the_model_inside_an_answered_name_only() -> None:
    facts = check_facts("x", ("y",))
    probs = np.array([0.9, 0.8, 0.7], np.float32)
    offsets = np.array([[0, 2], [3, 8], [9, 12]])
    out = fused(probs, offsets, type(facts)((), (), answered=((3, 8),)))
    assert out.tolist() == pytest.approx([0.9, 0.8 * ANSWERED_KEEP, 0.7])


def test_a_fit_saved_and_loaded_scores_as_before(tmp_path: Path) -> None:
    q = {"wh:who": np.array([1.0, 0.0], np.float32)}
    n = {"kind:#person": np.array([2.0, 1.0], np.float32)}
    path = tmp_path / "fit.npz"
    np.savez(path, q_keys=np.array(list(q)), q_vectors=np.array(list(q.values()), np.float16),
             n_keys=np.array(list(n)), n_vectors=np.array(list(n.values()), np.float16),
             linear_keys=np.array(["r|ov:1"]), linear_weights=np.array([0.5], np.float32))
    loaded = Fit.load(path)
    assert loaded.score(("wh:who",), ("kind:#person", "unseen"), ("ov:1",)) == pytest.approx(2.5)
    assert loaded.score(("wh:where",), ("kind:#person",), ()) == 0.0
