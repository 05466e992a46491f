"""The LLM-answer training data: RAGTruth folds, relabelled HaluEval, planted role and format
edits, verbalised records, and training rows built by the serving planner.

Real parts: the builders' own code, the shipped tokenizer, the lexical relevance scorer. The
RAGTruth lines are written here in the repository's own file format (two sources, one per
fold parity), since the data set itself is not part of the repository.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from training.corpus import ragtruth, records, relabel, roles
from training.corpus.builder import Example, LabelSpan
from training.encode import IGNORE
from training.evaluate import auroc
from training.rows import RowBuilder
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.manifest import DEFAULT_MODEL_DIR
from truthlens.detector.relevance import LexicalRelevance


def _ragtruth_dir(tmp_path: Path) -> Path:
    answer = "Automotive technicians in Alaska earn about $23.70 per hour, the lowest pay in the country."
    wrong = answer.index("the lowest")
    qa = [
        {
            "source_id": source_id,
            "source": {
                "question": "how do automotive technicians get paid",
                "passages": "passage 1:Technicians in Alaska earn about $23.70 per hour.\n\n"
                "passage 2:Pay varies by state.\n\n",
            },
            "responses": [
                {"response": answer, "model": "m", "labels": [{"start": wrong, "end": len(answer), "text": "x"}]},
                {"response": "Pay varies by state.", "model": "m", "labels": []},
            ],
        }
        for source_id in (11, 12, 13)
    ]
    for task in ragtruth.TASKS:
        rows = qa if task == "qa" else []
        (tmp_path / f"ragtruth_{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_ragtruth_folds_follow_source_id_parity() -> None:
    assert [ragtruth.fold_of(i) for i in (10, 11, 12, 13)] == ["eval", "dev", "eval", "train"]


def test_ragtruth_evaluation_half_is_refused_for_training(tmp_path: Path) -> None:
    root = _ragtruth_dir(tmp_path)
    with pytest.raises(ValueError, match="never trained"):
        list(ragtruth.training_examples("qa", ("train", "eval"), root))
    train = list(ragtruth.training_examples("qa", ("train",), root))
    assert {e.id.split("-")[2] for e in train} == {"13"}
    evaluation = list(ragtruth.responses("qa", ("eval",), root))
    assert {r.source_id for r in evaluation} == {12}


def test_ragtruth_qa_passages_are_split_and_labels_kept(tmp_path: Path) -> None:
    response = next(ragtruth.responses("qa", ("train",), _ragtruth_dir(tmp_path)))
    assert response.context == ("Technicians in Alaska earn about $23.70 per hour.", "Pay varies by state.")
    assert response.question == "how do automotive technicians get paid"
    assert response.answer[slice(*response.spans[0])] == "the lowest pay in the country."


def test_ragtruth_record_context_is_its_json() -> None:
    record = {"name": "Finch & Fork", "hours": {"Monday": "17:0-21:0"}}
    context, question = ragtruth.context_question("data2txt", record)
    assert json.loads(context[0])["name"] == "Finch & Fork"
    assert question == ragtruth.DATA2TXT_QUESTION


def test_relabel_marks_what_differs_from_the_right_answer_not_every_new_word() -> None:
    answer = "The capital of France is Lyon, a beautiful old city."
    spans = relabel.differing_spans(answer, "Paris", "What is the capital of France?")
    flagged = [answer[s:e] for s, e in spans]
    assert "Lyon, a beautiful old city" in flagged
    assert not any("capital" in f or "France" in f for f in flagged)
    # A wrong yes/no answer is flagged on its polarity word.
    assert relabel.differing_spans("No, they are not.", "yes", "Are both from Ohio?") == [(0, 2)]


def test_role_swap_exchanges_two_names_and_labels_the_first() -> None:
    sentence = "Michael Collins stayed in orbit while Neil Armstrong walked on the surface."
    edit = roles.swap_roles(sentence, random.Random(0))
    assert edit is not None
    new, start, end = edit
    assert new == "Neil Armstrong stayed in orbit while Michael Collins walked on the surface."
    assert new[start:end] == "Neil Armstrong"


def test_value_of_other_uses_a_value_the_passage_gives_elsewhere() -> None:
    passage = "Anthony Albanese leads the government. Peter Dutton leads the opposition."
    edit = roles.value_of_other("Anthony Albanese leads the government.", passage, random.Random(1))
    assert edit is not None
    new, start, end = edit
    assert new == "Peter Dutton leads the government." and new[start:end] == "Peter Dutton"


def test_each_role_error_can_come_with_its_faithful_twin_and_the_rest_stays_the_same() -> None:
    passages = [
        (f"p{i}", f"Michael Collins stayed in orbit while Neil Armstrong walked on the surface in {1960 + i}. "
         f"Anthony Albanese leads the government. Peter Dutton leads the opposition.", "Who did what?")
        for i in range(12)
    ]
    plain = list(roles.examples(passages, random.Random(4)))
    paired = list(roles.examples(passages, random.Random(4), twins=True))
    assert [e for e in paired if e.domain != "roles_twin"] == plain
    errors = [i for i, e in enumerate(paired) if e.domain == "roles_error"]
    assert errors
    for i in errors:
        twin, error = paired[i - 1], paired[i]
        assert twin.domain == "roles_twin" and not twin.labels
        assert (twin.context, twin.question) == (error.context, error.question)
        assert twin.answer != error.answer  # the same sentences, the error left out
        assert twin.id.rsplit("-", 1)[0] == error.id.rsplit("-", 1)[0]


def test_reformatting_keeps_values_and_changes_their_form() -> None:
    text = "The crest is 1,280 metres high; it opened on 14 March 1879 and 12% of visitors climb it."
    out = roles.reformat(text, random.Random(3))
    assert out != text
    assert "1280" in out or "March 14, 1879" in out or "12 percent" in out
    assert "12" in out and "1879" in out


def test_records_verbalise_a_json_record_and_plant_one_labelled_error() -> None:
    record = {
        "name": "Outpost", "address": "5650 Calle Real", "city": "Goleta", "state": "CA",
        "hours": {"Monday": "17:0-22:0"}, "business_stars": 4.0,
        "attributes": {"OutdoorSeating": True, "RestaurantsTakeOut": False}, "categories": "Bars, Restaurants",
    }
    examples = list(records.examples([("r", record)], random.Random(5), per_record=12, question="q"))
    assert {e.domain for e in examples} == {"record_faithful", "record_error"}
    for ex in examples:
        assert json.loads(ex.context[0])["name"] == "Outpost"
        for label in ex.labels:
            assert ex.answer[label.start : label.end].strip()
    faithful = " ".join(e.answer for e in examples if not e.labels)
    assert "17:00 to 22:00" in faithful or "4 stars" in faithful or "outdoor seating" in faithful


@pytest.fixture(scope="module")
def builder() -> RowBuilder:
    return RowBuilder(TextEncoder(DEFAULT_MODEL_DIR / "tokenizer.json"), LexicalRelevance(), 128)


def test_rows_are_what_serving_runs_and_labels_only_what_it_reads(builder: RowBuilder) -> None:
    filler = [f"Passage {i} describes the harbour traffic of town number {i} in detail." for i in range(20)]
    context = (*filler[:10], "The Vasa warship sank in Stockholm harbour in 1628.", *filler[10:])
    answer = "The Vasa sank in 1628. It sank in Stockholm harbour on its maiden voyage in 1711."
    wrong = answer.index("1711")
    labels = (LabelSpan(wrong, wrong + 4, "number"),)
    example = Example("x", "train", "t", context, "When did the Vasa sink?", answer, labels)
    rows = builder.rows(example)
    assert len(rows) >= 2  # the context does not fit one 128-token row: one row per claim
    read = [t for r in rows for t in r.answer_offsets]
    assert sorted(read) == sorted(set(read))  # every answer token is read from one row only
    positives = [
        offsets
        for r in rows
        for offsets, lab in zip(r.answer_offsets, [x for x in r.labels if x != IGNORE], strict=True)
        if lab == 1
    ]
    assert positives and all(answer[s:e] in "1711" for s, e in positives)
    for row in rows:
        assert len(row.input_ids) <= 128
        assert sum(lab != IGNORE for lab in row.labels) == len(row.answer_offsets)


def test_auroc_counts_ties_as_half() -> None:
    assert auroc([0.9, 0.8, 0.1], [True, True, False]) == 1.0
    assert auroc([0.5, 0.5], [True, False]) == 0.5
    assert auroc([0.1, 0.9], [True, False]) == 0.0
