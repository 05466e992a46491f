"""The human-labelled sets beyond RAGTruth: loaders on small inline samples of each real format,
the overlap screen against evaluation sources, and the split by source document.

Real parts: every loader and the screen run as in ``python -m training.corpus.llm_mix``; the
inputs are a few records written here in each repository's own file layout (copied in shape
from the published files: Quintd's annotation lines and output JSON, the XSum annotation CSV with
its ``\\'`` escapes and 1-based offsets, an AggreFact workbook sheet, the accuracy task's
``games.csv`` / ``gsml.csv`` / ``shared_task.jsonl``). No network.
"""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

from training.corpus import human_sets, quintd, rotowire_accuracy, sources, xsum_articles, xsum_faith

QUINTD_PROMPT = (
    "Based on the given data:\n```\n{'entity': 'Rainy Day', 'properties': [['director', 'Peter Schamoni'], "
    "['publication date', '1981']]}\n```\n\nYour task is to write a brief, fluent, and coherent single-paragraph "
    "description in natural language. Make sure that all the facts mentioned in the text can be derived from "
    "the input data."
)
QUINTD_OUT = " Rainy Day is a 1981 film directed by Peter Schamoni. It won an award in Vienna."


def _quintd_clone(root: Path) -> None:
    out_dir = root / quintd.OUTPUTS / "wikidata" / "default"
    out_dir.mkdir(parents=True)
    generated = {"dataset": "wikidata", "model": "zephyr", "generated": [{"in": QUINTD_PROMPT, "out": QUINTD_OUT}]}
    (out_dir / "zephyr.json").write_text(json.dumps(generated))
    ann_dir = root / quintd.ANNOTATIONS
    ann_dir.mkdir(parents=True)
    award = QUINTD_OUT.index("It won an award")
    line = {
        "annotator_id": "a1", "dataset": "wikidata", "model": "zephyr", "setup": "direct", "split": "test",
        "table_idx": 0,
        "annotations": [
            {"type": 1, "text": "It won an award in Vienna", "start": award},  # not checkable
            {"type": 3, "text": "Rainy Day is", "start": 1},  # "other" (style): not a support error
        ],
    }
    (ann_dir / "0-a1-1.jsonl").write_text(json.dumps(line) + "\n")


def test_quintd_labels_unsupported_spans_on_the_stripped_output(tmp_path: Path) -> None:
    _quintd_clone(tmp_path)
    ((key, example),) = list(quintd.load(tmp_path))
    assert key == "quintd/wikidata/0"
    assert example.context == ("{'entity': 'Rainy Day', 'properties': [['director', 'Peter Schamoni'], "
                               "['publication date', '1981']]}",)
    assert example.question.startswith("Based on the given data. Your task is to write")
    assert example.answer == QUINTD_OUT.strip()
    assert [example.answer[s.start : s.end] for s in example.labels] == ["It won an award in Vienna"]


XSUM_ROWS = [
    # bbcid, system, summary, type, span, start (1-based), end, worker
    ("101", "BERTS2S", "the leader of bahrain\\'s opposition met the crown prince in paris.", "extrinsic",
     "in paris", 57, 65, "wid_0"),
    ("101", "BERTS2S", "the leader of bahrain\\'s opposition met the crown prince in paris.", "extrinsic",
     "crown prince in paris", 44, 65, "wid_1"),
    ("101", "BERTS2S", "the leader of bahrain\\'s opposition met the crown prince in paris.", "NULL",
     "NULL", -1, -1, "wid_2"),
    ("101", "Gold", "bahrain\\'s opposition leader met the crown prince.", "NULL", "NULL", -1, -1, "wid_0"),
    ("101", "Gold", "bahrain\\'s opposition leader met the crown prince.", "extrinsic", "bahrain\\'s", 1, 10,
     "wid_1"),
    ("101", "Gold", "bahrain\\'s opposition leader met the crown prince.", "NULL", "NULL", -1, -1, "wid_2"),
    ("202", "Gold", "a summary without its article.", "NULL", "NULL", -1, -1, "wid_0"),
]
HEADER = ("bbcid", "system", "summary", "hallucination_type", "hallucinated_span", "hallucinated_span_start",
          "hallucinated_span_end", "worker_id")


def _xsum_clone(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    with (root / xsum_faith.ANNOTATIONS).open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(XSUM_ROWS)


def test_xsum_keeps_the_characters_two_of_three_annotators_marked(tmp_path: Path) -> None:
    _xsum_clone(tmp_path)
    examples = dict((e.id, (k, e)) for k, e in xsum_faith.load(tmp_path, {"101": "The article text."}))
    assert set(examples) == {"xsum-101-BERTS2S", "xsum-101-Gold"}  # 202 has no article
    key, bert = examples["xsum-101-BERTS2S"]
    assert key == "xsum/101"
    assert bert.answer == "the leader of bahrain's opposition met the crown prince in paris."
    # wid_0 marked "in paris", wid_1 "crown prince in paris", wid_2 nothing: two agree on "in paris"
    assert [bert.answer[s.start : s.end] for s in bert.labels] == ["in paris"]
    assert examples["xsum-101-Gold"][1].labels == ()  # one annotator of three


def _sheet(rows: list[list[str]]) -> str:
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    body = "".join(
        "<row>" + "".join(f'<c t="inlineStr"><is><t>{v}</t></is></c>' for v in r) + "</row>" for r in rows
    )
    return f'<worksheet xmlns="{ns}"><sheetData>{body}</sheetData></worksheet>'


def _aggrefact_clone(root: Path) -> None:
    (root / "data" / "error_type_mapping").mkdir(parents=True)
    for name in xsum_articles.WORKBOOKS:
        with zipfile.ZipFile(root / name, "w") as book:
            book.writestr("xl/worksheets/sheet1.xml", _sheet([
                ["dataset", "id", "summ", "label"], ["frank", "cnn1", "a cnn summary", "0"],
            ]))
            book.writestr("xl/worksheets/sheet2.xml", _sheet([
                ["annotated_span", "doc", "id", "origin", "summ"],
                ["[]", "Bahrain's opposition leader met the crown prince.", "101", "xsum", "s"],
            ]))
    for name in xsum_articles.ERROR_LISTS:
        with (root / name).open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["dataset", "origin", "id", "doc", "summ"])
            writer.writerow(["CLIFF", "xsum", "303", "Another article.", "s"])
            writer.writerow(["CLIFF", "cnndm", "cnn2", "A CNN article.", "s"])


def test_xsum_articles_come_from_aggrefact_workbooks_and_error_lists(tmp_path: Path) -> None:
    _aggrefact_clone(tmp_path)
    assert xsum_articles.articles(tmp_path) == {
        "101": "Bahrain's opposition leader met the crown prince.",
        "303": "Another article.",
    }


def _rotowire_clone(root: Path) -> str:
    root.mkdir(parents=True, exist_ok=True)
    text = "The Boston Celtics defeated the Los Angeles Lakers , 113 - 107 , on Wednesday . Al Horford scored 11 ."
    with (root / "games.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["TEXT_ID", "HOME_NAME", "VIS_NAME", "GENERATED_TEXT"])
        writer.writerow(["S001", "Celtics", "Lakers", text])
    with (root / "gsml.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["TEXT_ID", "SENTENCE_ID", "ANNOTATION_ID", "TOKENS", "SENT_TOKEN_START", "SENT_TOKEN_END",
                         "DOC_TOKEN_START", "DOC_TOKEN_END", "TYPE", "CORRECTION", "COMMENT"])
        writer.writerow(["S001.txt", "1", "1", "Wednesday", "15", "15", "15", "15", "NAME", "Friday", ""])
        writer.writerow(["S001.txt", "2", "2", "scored 11", "3", "4", "19", "20", "NUMBER", "", ""])
    box = {
        "PLAYER_NAME": {"0": "Al Horford", "1": "Gerald Green"}, "TEAM_CITY": {"0": "Boston", "1": "Boston"},
        "START_POSITION": {"0": "C", "1": ""}, "MIN": {"0": "33", "1": "N/A"},
    } | {k: {"0": "9", "1": "N/A"} for k in rotowire_accuracy._PLAYER_STATS if k != "MIN"}
    team = {"TEAM-CITY": "Boston", "TEAM-NAME": "Celtics", "TEAM-PTS": "113", "TEAM-WINS": "32"}
    vis = {"TEAM-CITY": "Los Angeles", "TEAM-NAME": "Lakers", "TEAM-PTS": "107"}
    game = {"shared_task_text_id": "S001", "day": "02_03_17", "home_line": team, "vis_line": vis, "box_score": box}
    (root / "shared_task.jsonl").write_text(json.dumps(game))
    return text


def test_rotowire_maps_one_based_document_tokens_to_characters(tmp_path: Path) -> None:
    text = _rotowire_clone(tmp_path)
    ((key, example),) = list(rotowire_accuracy.load(tmp_path))
    assert key == "rotowire/S001" and example.answer == text
    assert [example.answer[s.start : s.end] for s in example.labels] == ["Wednesday", "scored 11"]
    lines = example.context[0].splitlines()
    assert lines[0] == "date: 2017-02-03"
    assert lines[1] == "Boston Celtics (home): PTS 113, WINS 32"
    assert lines[3].startswith("Al Horford (Boston, C): MIN 33, PTS 9")
    assert len(lines) == 4  # the player who did not play is left out


ARTICLE = (
    "The council approved the new stadium plan on Tuesday after a long debate about parking, traffic and noise "
    "in the streets around the ground, and the club said building work would start in the spring next year."
)


def _evaluation_index(tmp_path: Path) -> sources.EvaluationSources:
    eval_data = tmp_path / "eval_data"
    eval_data.mkdir()
    for name in ("ragtruth_qa.jsonl", "ragtruth_data2txt.jsonl", "faithbench_summary.jsonl"):
        (eval_data / name).write_text(json.dumps({"source_id": 2, "source": {"passages": "x", "question": "y"}}) + "\n")
    (eval_data / "ragtruth_summary.jsonl").write_text(json.dumps({"source_id": 4, "source": ARTICLE}) + "\n")
    return sources.load_evaluation_sources(eval_data)


def test_a_document_sharing_most_8_word_sequences_with_an_evaluation_source_is_removed(tmp_path: Path) -> None:
    index = _evaluation_index(tmp_path)
    reworded_tail = ARTICLE[: ARTICLE.index("and the club")] + "while fans celebrated outside the town hall."
    unrelated = "A storm closed three schools in the north of the county on Monday, officials said in a statement."
    assert index.overlap(ARTICLE.upper()) == 1.0  # case and punctuation do not hide a copy
    assert index.overlap(reworded_tail) >= sources.OVERLAP_LIMIT
    assert index.overlap(unrelated) == 0.0
    screened = sources.screen([("a", reworded_tail), ("b", unrelated)], index)
    assert screened.removed == ("a",) and set(screened.kept) == {"b"}


def test_every_answer_over_one_document_lands_in_one_part_and_overlaps_are_counted(tmp_path: Path) -> None:
    from training.corpus.builder import Example

    index = _evaluation_index(tmp_path)
    keyed = []
    for doc in range(40):
        article = f"Report number {doc} on the harvest in district {doc} of the valley, written for the farmers."
        for model in range(3):
            keyed.append((f"doc/{doc}", Example(f"d{doc}-m{model}", "train", "t", (article,), "q", "a", ())))
    keyed.append(("doc/leak", Example("leak", "train", "t", (ARTICLE,), "q", "a", ())))
    parts = human_sets.split_set("toy", keyed, index)
    assert parts.removed_documents == ("doc/leak",) and parts.removed_examples == 1
    part_of_doc: dict[str, set[str]] = {}
    for example in parts.train + parts.dev:
        part_of_doc.setdefault(example.id.split("-")[0], set()).add(example.split)
    assert all(len(p) == 1 for p in part_of_doc.values())
    assert parts.counts()["train"] + parts.counts()["dev"] == 120
    assert 0 < len(parts.dev) < len(parts.train)  # one document in five, by a stable hash
    assert sources.part_of("doc/7") == sources.part_of("doc/7")
