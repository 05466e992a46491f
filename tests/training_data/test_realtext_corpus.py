"""The real-text training data: HaluEval folds and labels, planted contradictions, calibration.

Pure functions over small hand-written records (the HaluEval files themselves are not in the
repository); nothing is scripted.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from training.calibrate import candidates, sweep
from training.corpus import halueval, lexical, perturb
from training.scoring import Case, Scored
from truthlens.detector.types import DetectionInput

QA_ROWS = [
    {
        "knowledge": "Michael Collins flew the Command Module Columbia alone in lunar orbit during Apollo 11.",
        "question": "Who stayed in lunar orbit aboard Columbia?",
        "right_answer": "Michael Collins",
        "hallucinated_answer": "Buzz Aldrin stayed in lunar orbit aboard Columbia.",
    },
    {
        "knowledge": "The Eiffel Tower was completed in 1889 in Paris.",
        "question": "Was the Eiffel Tower completed in 1889?",
        "right_answer": "yes",
        "hallucinated_answer": "No, it was completed in 1925.",
    },
]


def _halueval_dir(tmp_path: Path, rows: int = 21) -> Path:
    with (tmp_path / "qa.jsonl").open("w") as f:
        for i in range(rows):
            f.write(json.dumps(QA_ROWS[i % 2]) + "\n")
    return tmp_path


def test_folds_are_by_line_index_and_training_never_sees_the_evaluation_fold(tmp_path: Path) -> None:
    root = _halueval_dir(tmp_path)
    assert [halueval.fold_of(i) for i in (0, 1, 2, 10, 11, 19, 20)] == ["eval", "dev", "train", "eval", "dev", "train", "eval"]
    assert [i for i, _ in halueval.items("qa", ("eval",), root)] == [0, 10, 20]
    with pytest.raises(ValueError, match="evaluation fold"):
        halueval.training_items("qa", ("train", "eval"), root)
    ids = [ex.id for ex in halueval.examples("qa", ("train",), root)]
    assert ids and all(int(ex_id.split("-")[2]) % 10 >= 2 for ex_id in ids)


def test_hallucinated_answer_is_labelled_on_its_novel_words_and_gets_a_faithful_twin(tmp_path: Path) -> None:
    root = _halueval_dir(tmp_path)
    by_id = {ex.id: ex for ex in halueval.examples("qa", ("train",), root)}
    wrong = by_id["halueval-qa-2-hallucinated"]
    assert [wrong.answer[s.start : s.end] for s in wrong.labels] == ["Buzz Aldrin"]
    assert by_id["halueval-qa-2-right"].labels == ()
    twin = by_id["halueval-qa-2-twin"]
    assert twin.answer == "Michael Collins stayed in lunar orbit aboard Columbia." and twin.labels == ()


def test_a_wrong_yes_no_is_labelled_on_its_polarity_word(tmp_path: Path) -> None:
    root = _halueval_dir(tmp_path)
    wrong = next(ex for ex in halueval.examples("qa", ("train",), root) if ex.id == "halueval-qa-3-hallucinated")
    labelled = [wrong.answer[s.start : s.end] for s in wrong.labels]
    assert labelled[0] == "No" and "1925" in labelled
    assert not any(ex.id == "halueval-qa-3-twin" for ex in halueval.examples("qa", ("train",), root))


def test_novel_spans_ignore_inflections_and_stopwords() -> None:
    answer = "The towers were completed by Gustave Eiffel's rivals in 1925."
    spans = lexical.novel_spans(answer, ["The tower was completed by Gustave Eiffel in 1889."])
    assert [answer[s:e] for s, e in spans] == ["rivals in 1925"]


@pytest.mark.parametrize(
    ("edit", "answer", "changed"),
    [
        (perturb.negate, "The bridge was opened to traffic in May.", "was not"),
        (perturb.reverse_relation, "Sales rose sharply after the merger.", "fell"),
        (perturb.swap_unit, "The trail is 12 kilometres long.", "miles"),
    ],
)
def test_each_planted_contradiction_is_labelled_on_the_changed_characters(edit, answer: str, changed: str) -> None:  # type: ignore[no-untyped-def]
    new, start, end = edit(answer, random.Random(1))
    assert new != answer and new[start:end] == changed
    assert new[:start] == answer[:start]


def test_a_changed_number_or_a_swapped_name_is_labelled_and_contradicts_the_passage() -> None:
    answer = "Ada Lovelace met Charles Babbage in 1833."
    passage = "Ada Lovelace met Charles Babbage in 1833. Mary Somerville introduced them."
    new, start, end = perturb.change_number(answer, random.Random(3))  # type: ignore[misc]
    assert new[start:end].isdigit() and new[start:end] != "1833" and 1818 <= int(new[start:end]) <= 1848  # a near year
    new, start, end = perturb.swap_entity(answer, [passage], random.Random(3))  # type: ignore[misc]
    assert new[start:end] == "Mary Somerville"  # another name of the same passage
    assert perturb.swap_entity(answer, [answer], random.Random(3)) is None  # no other name to swap in


def test_sweep_picks_the_decision_with_the_best_mean_balanced_accuracy() -> None:
    offsets = np.array([[0, 4]])

    def scored(p: float, hallucinated: bool) -> Scored:
        return Scored(Case(DetectionInput(("ctx",), "q", "word"), hallucinated), np.array([p], dtype=np.float32), offsets)

    # Hallucinated answers score 0.72, faithful ones 0.62 / 0.58: only thresholds in (0.62, 0.72) get both sets right.
    sets = {
        "a": [scored(0.72, True), scored(0.62, False)],
        "b": [scored(0.72, True), scored(0.58, False)],
        "qa faithful twins (dev)": [scored(0.58, False)],
    }
    best, table = sweep(sets, candidates(route_threshold=0.5, below=1.0))
    assert best.rules.token_threshold == 0.65 and best.rules.aggregation == "noisy_or"
    chosen = table[best]["a"]
    assert (chosen.balanced_accuracy, chosen.precision, chosen.recall, chosen.false_alarms) == (1.0, 1.0, 1.0, 0.0)
    low = next(d for d in table if d.rules.token_threshold == 0.3 and d.rules.aggregation == "noisy_or")
    assert table[low]["a"].false_alarms == 1.0
    # Only thresholds under 0.6 allowed: 0.30 … 0.55 tie (set b right, set a half right): the lowest wins.
    assert sweep(sets, candidates(route_threshold=0.5, below=0.6))[0].rules.token_threshold == 0.3


def test_calibration_refuses_a_role_check_it_could_not_run(capsys: pytest.CaptureFixture[str]) -> None:
    # The role check is one of the evidence checks: asking for it without them is named, not ignored.
    from training.calibrate import main

    with pytest.raises(SystemExit):
        main(["--role-checks", "on", "--no-evidence-checks"])
    assert "--role-checks on" in capsys.readouterr().err
