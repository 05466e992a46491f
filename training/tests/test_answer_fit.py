"""The short-answer fit's recipe (``python -m training.answer_fit``): its trainer on a toy set.

Real parts: the recipe's trainer and the weights file format the product loads
(``truthlens.detector.facts.short_answers.answer_fit.Fit``). The examples are written here: who-
and where-questions over names whose kind decides the answer. No scripted parts, no network.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from training.answer_fit import Example, Trainer, ranked_first
from truthlens.detector.facts.short_answers.answer_fit import Fit


def _examples() -> list[Example]:
    out = []
    for i in range(30):
        wh = "who" if i % 2 else "where"
        person, place = frozenset({f"ann{i}", "lee"}), frozenset({f"oslo{i}"})
        found = {
            person: (("wh:" + wh,), ("kind:#person", f"last:lee{i}"), ("ov:1",)),
            place: (("wh:" + wh,), ("kind:place", f"last:oslo{i}"), ("ov:1",)),
        }
        out.append(Example(found, person if wh == "who" else place))
    return out


def test_the_trainer_learns_which_kind_of_name_each_question_asks_for() -> None:
    items = _examples()
    assert ranked_first(Trainer().fit(items, passes=20, rate=0.2), items) == 1.0


def test_weights_saved_by_the_recipe_load_in_the_product_with_the_same_shares(tmp_path: Path) -> None:
    items = _examples()
    trainer = Trainer().fit(items, passes=5)
    trainer.save(tmp_path / "fit.npz")
    loaded = Fit.load(tmp_path / "fit.npz")
    for e in items[:4]:
        mine, theirs = trainer.as_fit().shares(e.found), loaded.shares(e.found)
        assert theirs == pytest.approx(mine, abs=1e-3)  # (vectors are stored in half precision)
    assert not any(k.startswith("last:") for k in loaded.n)  # a key seen once is not kept
