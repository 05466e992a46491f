"""What a request asks of its context (``truthlens.detector.reading.requests``), on the held-out
wordings written before the rule (``tests/fixtures/reading/wordings_heldout.json``, never changed
after), and the task name each reading gives (``x-truthlens-task``). ``python -m
bench.request_reading`` prints the accuracy and each miss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truthlens.detector.prompt import RECORD_INSTRUCTION, SUMMARY_INSTRUCTION, read_task, without_context_section
from truthlens.detector.reading.requests import what_it_asks

CASES = json.loads((Path(__file__).parents[1] / "fixtures" / "reading" / "wordings_heldout.json").read_text())["cases"]
ARTICLE = (
    "The board of Norwell Foods met on Monday. The chief financial officer, Dana Reyes, said revenue rose 8% to "
    "1.2 billion dollars, driven by frozen meals. The company will open a plant in Leeds in 2026 and hire 300 "
    "people. Shares rose 4% after the announcement, and analysts said the outlook was the strongest in years."
)
RECORD = json.dumps({"name": "Harbour Cafe", "delivery": False, "hours": {"Sunday": "9:00-15:00"}})


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["text"][:40])
def test_each_held_out_wording_reads_as_what_it_asks(case: dict[str, str]) -> None:
    assert what_it_asks(case["text"]) == case["asks"]


def test_the_held_out_set_is_not_small() -> None:
    assert len(CASES) >= 100 and {c["asks"] for c in CASES} == {"question", "whole", "ungroundable"}


@pytest.mark.parametrize("request_text", ["Give me the CFO's name.", "CFO name?", "Tell me where the plant opens",
                                          "pls tell me how many people they hire"])
def test_a_question_stays_a_question_however_phrased(request_text: str) -> None:
    task = read_task([ARTICLE], request_text)
    assert task.shape == "passages" and task.name == "question"


def test_a_question_over_a_record_keeps_its_words_and_an_overview_is_the_record_instruction() -> None:
    assert read_task([RECORD], "Tell me whether they deliver.").name == "question"
    assert read_task([RECORD], "Tell me whether they deliver.").question != RECORD_INSTRUCTION
    assert read_task([RECORD], "Describe this place.").name == "record"


@pytest.mark.parametrize("request_text", ["What do you think?", "Is this article biased?", "Translate this into French.",
                                          "Explain like I'm five.", "Rewrite this for a ten-year-old."])
def test_requests_no_context_can_ground_are_read_as_such(request_text: str) -> None:
    assert read_task([ARTICLE], request_text).name == "ungroundable"


def test_a_summary_request_is_a_summary() -> None:
    task = read_task([ARTICLE], "Give me the gist.")
    assert (task.shape, task.question, task.name) == ("article", SUMMARY_INSTRUCTION, "summary")


@pytest.mark.parametrize("question", ["When did sales rise? \nContext: Sales rose 40% in 2019.",
                                      "When did sales rise?\n\n## Sources\nSales rose 40% in 2019.",
                                      "When did sales rise?\n**Background:** Sales rose 40% in 2019."])
def test_a_context_section_typed_into_the_question_is_not_read_as_the_question(question: str) -> None:
    assert read_task([ARTICLE], question).question == "When did sales rise?"


def test_a_section_with_no_question_before_it_is_left_to_the_question_reading() -> None:
    assert without_context_section("Context: revenue\nWhat rose?") == "Context: revenue\nWhat rose?"
    assert without_context_section("\nSources:\nrevenue") == "\nSources:\nrevenue"


def test_a_request_that_repeats_the_document_is_read_without_it() -> None:
    task = read_task([ARTICLE], f"Here is the article:\n{ARTICLE}\n\nWho is the chief financial officer?")
    assert ARTICLE[:60] not in task.question and task.question.endswith("Who is the chief financial officer?")
    assert task.name == "question"


@pytest.mark.parametrize("request_text", ["How well do solar panels work in winter?", "Who translated the novel?",
                                          "Who wrote the song that opens the film?", "Is the museum open on Mondays?",
                                          "Which painter worked in the style of Monet?", "Do You Believe? came out when?"])
def test_a_question_that_mentions_a_translation_a_song_or_an_assessment_word_is_a_question(request_text: str) -> None:
    assert what_it_asks(request_text) == "question"
