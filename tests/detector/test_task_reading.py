"""What a check is about, read from the context's structure and whether the request asks about it.

Pure functions, no model: ``read_task`` gives the task shape and the question the model's prompt
and the learned verdict read. A summary's or a record's instruction, however worded, becomes the
shape's one canonical instruction (the one the model was trained on); a real question keeps its
words. The wordings here are written for these tests and differ from the wording bench's
(``bench/wordings.py``), so neither list is what the rule was written against.
"""

from __future__ import annotations

import json

import pytest

from truthlens.detector.prompt import (
    RECORD_INSTRUCTION,
    SUMMARY_INSTRUCTION,
    Task,
    checked,
    is_record,
    model_questions,
    read_task,
    the_question,
)
from truthlens.detector.types import DetectionInput

ARTICLE = (
    "The city council of Brightvale met on Tuesday to vote on the new tram line. After four hours of "
    "debate, members approved the plan by 31 votes to 12. The line will link the harbour with the "
    "university and is expected to open in 2027. Opponents said the cost, put at 410 million euros, "
    "was too high for a city of 200,000 people, and a group of shop owners on Market Street has "
    "promised to challenge the decision in court. The mayor, Ilse Marten, called the vote historic."
)
RECORD = json.dumps({"name": "Harbour Cafe", "city": "Reno", "hours": {"Sunday": "9:00-15:00"},
                     "categories": "Coffee & Tea, Breakfast"}, indent=1)
QA_PASSAGES = (
    "Passage one says the tram line was approved on Tuesday by 31 votes to 12.",
    "Passage two says the line will open in 2027 and link the harbour with the university.",
    "Passage three lists the cost as 410 million euros.",
)


@pytest.mark.parametrize("instruction", [
    "", "   ", "Summarise.", "tl;dr", "TLDR pls", "Please provide a brief summary, thanks!",
    "Sum it up in two sentences.", "Write a 60-word précis of the piece.", "Give me the main points.",
    "What's this story about?", "Boil this down for a busy reader", "Explain this report simply.",
    "Make it shorter", "In a few lines, tell me what this covers.", "Write a short news digest of the text below.",
    "Summarize the following news within 90 words:", "Summarise the piece on the tram vote",
])
def test_any_instruction_to_summarise_one_article_is_read_as_the_canonical_one(instruction: str) -> None:
    assert read_task([ARTICLE], instruction) == Task("article", SUMMARY_INSTRUCTION)


@pytest.mark.parametrize("instruction", [
    "", "Describe it.", "Write a listing blurb (max 50 words).", "Turn these fields into a sentence or two.",
    "What does the record say?", "Produce natural-language text from the JSON below.", "Data to text, please",
    "Compose a friendly overview of the business for our site.", "WRITE A DESCRIPTION",
])
def test_any_instruction_to_verbalise_a_record_is_read_as_the_canonical_one(instruction: str) -> None:
    assert read_task([RECORD], instruction) == Task("record", RECORD_INSTRUCTION)


@pytest.mark.parametrize(("context", "question"), [
    ([ARTICLE], "When will the tram line open?"),
    ([ARTICLE], "Who called the vote historic"),
    ([ARTICLE], "How many council members voted against the plan?"),
    ([ARTICLE], "The mayor of Brightvale, Ilse Marten, called which vote historic"),
    (list(QA_PASSAGES), "tram line cost"),
    (list(QA_PASSAGES), "when does the line open and what will it cost"),
    (list(QA_PASSAGES), "Can you summarize the cost of the tram line?"),
    (["Canberra is the capital of Australia."], "Capital?"),
])
def test_a_real_question_keeps_its_words_and_its_passages_shape(context: list[str], question: str) -> None:
    assert read_task(context, question) == Task("passages", question)


def test_without_context_the_request_is_a_question_whatever_it_says() -> None:
    assert read_task([], "What is 2+2?") == Task("passages", "What is 2+2?")
    assert read_task([""], "Summarize.") == Task("passages", "Summarize.")


@pytest.mark.parametrize("wrapped", [
    "Question: when does the tram line open?",
    "Q: when does the tram line open?\nA:",
    "Based on the passages, answer the question below in 50 words or less.\nQuery: when does the tram line open?",
    "<question>when does the tram line open?</question>",
    "### Question\nwhen does the tram line open?\n\n### Answer",
    "Answer in one sentence.\nwhen does the tram line open?",
    "Read the passages and answer: when does the tram line open?",
    "Hi! when does the tram line open? Thanks!",
    "Using the documents above, when does the tram line open?",
    "According to the sources, when does the tram line open?",
    "Could you please tell me when does the tram line open?",
    "I need to know when does the tram line open?",
    "Hi! Can you tell me when does the tram line open? Thanks a lot.",
])
def test_a_question_is_read_without_what_only_wraps_it(wrapped: str) -> None:
    assert read_task(list(QA_PASSAGES), wrapped) == Task("passages", "when does the tram line open?")


@pytest.mark.parametrize("question", [
    "Who is he?",  # no words of its own, but a question
    "What was the middle name of the pianist who first performed Prokofiev's Piano Sonata No. 8?",
    "What comic book published the female superhero created by J. H. Williams III?",
    "[Human]: I loved the film. Thank you. [Assistant]: Glad to hear it. [Human]: Who directed it?",
    "Which writer, Jorge Amado or Sarah Caudwell, remains the best known of modern Brazilian writers?",
    "Are Just, Melvin: Just Evil and Speaking in Strings both documentaries about musicians?",
    "In 2019, who designed the tower?",  # an opening with a fact of its own
    "Tell me about the tower",  # a topic, not a wrapped question
])
def test_a_question_that_wraps_nothing_is_kept_byte_for_byte(question: str) -> None:
    assert the_question(question) == question


def test_a_question_about_a_record_keeps_its_words() -> None:
    question = "Is the cafe open on Sunday?"
    assert read_task([RECORD], question) == Task("record", question)


def test_the_document_repeated_in_the_request_is_not_read_as_a_question() -> None:
    """An application that sends the article in its user message as well as in the passages."""
    assert read_task([ARTICLE], ARTICLE) == Task("article", SUMMARY_INSTRUCTION)
    assert read_task([ARTICLE], f"Summarise this:\n\n{ARTICLE}\n\nSummary:") == Task("article", SUMMARY_INSTRUCTION)
    assert read_task([RECORD], f"Describe:\n```json\n{RECORD}\n```") == Task("record", RECORD_INSTRUCTION)


def test_several_passages_are_an_article_only_when_nothing_is_asked() -> None:
    paragraphs = [ARTICLE[:250], ARTICLE[250:]]
    assert read_task(paragraphs, "Summarize the documents.").shape == "article"
    assert read_task(paragraphs, "").shape == "article"
    assert read_task(paragraphs, "Summarize what they say about the cost.").shape == "passages"


def test_a_short_passage_with_a_remark_is_not_an_article() -> None:
    """A chat turn that is not a question (HaluEval's dialogues) over a fact or two."""
    knowledge = "Iron Man is a 2008 film directed by Jon Favreau."
    assert read_task([knowledge], "[Human]: I loved Iron Man. [Assistant]: It is great. [Human]: Sure is").shape \
        == "passages"


def test_a_short_passage_is_summarised_only_when_asked_to() -> None:
    fact = "The tower was finished in 1889 and is 330 metres tall."
    assert read_task([fact], "").shape == "passages"
    assert read_task([fact], "q").shape == "passages"
    assert read_task([fact], "Summarise this.") == Task("article", SUMMARY_INSTRUCTION)


def test_a_summary_is_scored_under_every_wording_the_model_learned_summaries_with() -> None:
    assert model_questions(SUMMARY_INSTRUCTION) == (SUMMARY_INSTRUCTION, "Summarize the article.")
    assert model_questions(RECORD_INSTRUCTION) == (RECORD_INSTRUCTION,)
    assert model_questions("When will the line open?") == ("When will the line open?",)


def test_reading_is_idempotent_and_checked_changes_only_the_question() -> None:
    for context, question in (([ARTICLE], "TL;DR"), ([RECORD], "Describe."), (list(QA_PASSAGES), "tram cost")):
        task = read_task(context, question)
        assert read_task(context, task.question) == task
    item = DetectionInput([ARTICLE], "give me the gist", "The council approved the tram line.")
    assert checked(item) == DetectionInput([ARTICLE], SUMMARY_INSTRUCTION, item.answer)
    kept = DetectionInput(list(QA_PASSAGES), "tram cost", "410 million euros.")
    assert checked(kept) is kept


@pytest.mark.parametrize("text", [
    RECORD,
    "{'city': {'name': 'Snagov', 'country': 'RO'}, 'list': [{'temp': 7.15}]}",
    "# country: Malta\n# title: Life expectancy\nyear,value\n2000,78.1\n2001,78.4\n2002,78.6",
    "Catalan Republic\n---\n- basic form of government: republic\n- driving side: right\n- capital: Barcelona",
    "Ohana Honpo\n---\n- headquarters location: Oita\n- instance of: business",
    "Name | Price | Stock\nLamp | 12.00 | 4\nDesk | 150.00 | 1",
])
def test_structured_data_in_several_formats_is_a_record(text: str) -> None:
    assert is_record(text)


@pytest.mark.parametrize("text", [
    ARTICLE,
    "Note: the office is closed.\nWe reopen on Monday, as usual.\nThanks for your patience, everyone.",
    "Alice: I think we should go.\nBob: Not yet, we are waiting for Carol.\nAlice: Fine, ten more minutes.",
    "{not json at all, just braces}",
])
def test_prose_is_not_a_record(text: str) -> None:
    assert not is_record(text)
