"""Instructions an application might send with its request, per task shape, for the wording table.

The detector's model was trained on one instruction per task shape (RAGTruth's "Summarize the
following news article." for a summary, its data-to-text request for a record, the bare question
for QA). Applications word it every way: nothing at all, a terse verb, a polite request, a
length limit, "TL;DR", the instruction in a system message with the document in the user
message. ``python -m bench.detector_quality --wordings`` checks the same development answers
under each wording below and prints, per wording, the share of faithful answers flagged and the
balanced accuracy, so a verdict that hangs on the words shows.

Each wording is what the gateway reads as the request's question: the text of the last user
message (``system`` is the system message an application would send beside it, which the
gateway does not read as the question; it is kept so the request is described whole). In
``user``, ``{question}`` is the data set's own question (QA) and ``{document}`` the context's
text (an application that puts the document in its user message as well as in the passages).
The first wording of each shape is the one the model was trained on.

These were written for this table, not taken from the data sets; a held-out set of other
wordings measures the same thing, so nothing in the detector may match these strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from training.corpus.ragtruth import DATA2TXT_QUESTION, SUMMARY_QUESTION


@dataclass(frozen=True, slots=True)
class Wording:
    name: str
    user: str  # the last user message; {question} and {document} are filled in
    system: str = ""  # an instruction in the system message (not the gateway's question)

    def question(self, question: str, context: Sequence[str]) -> str:
        """The question the gateway reads from a request so worded."""
        return self.user.replace("{question}", question).replace("{document}", "\n\n".join(context))


QA: tuple[Wording, ...] = (
    Wording("the question alone (trained)", "{question}"),
    Wording("labelled", "Question: {question}"),
    Wording("Q/A layout", "Q: {question}\nA:"),
    Wording("terse, question mark", "{question}?"),
    Wording("instruction line before", "Answer the question using only the passages.\n\n{question}"),
    Wording("polite", "Hi! Could you please tell me {question}? Thanks a lot."),
    Wording("imperative", "Answer this: {question}"),
    Wording("based on the context", "Please answer the following question based on the context provided: {question}"),
    Wording("one sentence after", "{question}\nAnswer in one sentence."),
    Wording("length limit (words)", "Based on the retrieved passages, respond to the user query below in 100 words "
            "or less.\nQuery: {question}"),
    Wording("length limit after", "{question}\nKeep the answer under 50 words."),
    Wording("documents above", "Using the documents above, {question}"),
    Wording("context then label", "Context is given above. Question: {question}\nAnswer:"),
    Wording("persona", "You are a helpful assistant. {question}"),
    Wording("refusal instruction", "Instructions: answer from the passages only and say so if they do not contain "
            "the answer.\nQuestion: {question}"),
    Wording("system message", "{question}",
            system="Answer the user's question from the provided documents only."),
    Wording("upper-case label", "QUESTION: {question}"),
    Wording("cite request", "{question}\n\nPlease cite the passages you used."),
    Wording("I need to know", "I need to know {question}"),
    Wording("read and answer", "Read the passages and answer: {question}"),
    Wording("markdown headings", "### Question\n{question}\n\n### Answer"),
    Wording("XML tags", "<question>{question}</question>"),
    Wording("TL;DR", "TL;DR answer please: {question}"),
)

SUMMARY: tuple[Wording, ...] = (
    Wording("recipe (trained)", SUMMARY_QUESTION),
    Wording("none", ""),
    Wording("terse", "Summarize."),
    Wording("casual", "summarise this pls"),
    Wording("TL;DR", "TL;DR"),
    Wording("tl;dr?", "tl;dr?"),
    Wording("polite", "Could you please write a short summary of the article below? Thank you!"),
    Wording("imperative", "Write a summary."),
    Wording("length limit (RAGTruth's form)", "Summarize the following news within 116 words:"),
    Wording("length limit, or less", "Summarize the article in 100 words or less."),
    Wording("length limit, no more than", "Please summarise the passage above in no more than 50 words."),
    Wording("sentences limit, capitals", "SUMMARIZE THE ARTICLE BELOW IN 3 SENTENCES"),
    Wording("key points", "Give me the key points."),
    Wording("what is it about", "What is this article about?"),
    Wording("what happened", "What happened?"),
    Wording("overview", "Provide a concise overview of this news story in three sentences."),
    Wording("condense", "Condense the text into one paragraph."),
    Wording("recap", "Recap for a busy reader:"),
    Wording("abstract", "Write an abstract for this piece."),
    Wording("plain language", "Explain this news report in plain language."),
    Wording("persona", "You are a news editor. Produce a faithful, neutral summary for the newsletter."),
    Wording("briefly, a question", "Briefly, what does the text say?"),
    Wording("system message, article in the user message", "{document}",
            system="You summarize news articles for a newsletter in at most 120 words."),
    Wording("instruction and article in one message", "Summarize this:\n\n{document}"),
    Wording("RAGTruth's prompt layout", "Summarize the following news within 150 words:\n{document}\noutput:"),
)

RECORD: tuple[Wording, ...] = (
    Wording("recipe (trained)", DATA2TXT_QUESTION),
    Wording("none", ""),
    Wording("terse", "Describe."),
    Wording("describe the record", "Describe this record."),
    Wording("TL;DR", "TL;DR of the data"),
    Wording("polite", "Please write a short, friendly description based on the data below. Thanks!"),
    Wording("imperative", "Write a paragraph from this data."),
    Wording("JSON to text", "Turn the JSON into text."),
    Wording("length limit, or less", "Write an objective overview of the following structured data in 100 words "
            "or less."),
    Wording("length limit, under", "Summarize the record in under 80 words."),
    Wording("recipe with a length limit", DATA2TXT_QUESTION + " Keep it under 120 words."),
    Wording("what does it say", "What does this data say?"),
    Wording("website copy", "Generate a description for our website from the record."),
    Wording("verbalise", "Verbalize the structured data."),
    Wording("plain English", "Explain the data in plain English."),
    Wording("single paragraph", "Write a brief, fluent, coherent single-paragraph description in natural language."),
    Wording("task label", "Data-to-text:"),
    Wording("convert", "Convert the following record into a natural-language summary."),
    Wording("persona", "You are a copywriter. Write a short blurb from the facts given."),
    Wording("key facts", "Key facts, please."),
    Wording("capitals", "DESCRIBE THE ENTITY IN THE DATA"),
    Wording("system message, record in the user message", "{document}",
            system="Turn the structured record the user sends into a short description for a listings page."),
    Wording("instruction and record in one message", "Describe this:\n```json\n{document}\n```"),
)

BY_SHAPE: dict[str, tuple[Wording, ...]] = {"qa": QA, "summary": SUMMARY, "record": RECORD}
