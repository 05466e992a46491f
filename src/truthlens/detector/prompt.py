"""The detector's prompt: the request read as the task the model was trained on, in
LettuceDetect's English QA template, byte for byte.

The shipped model is trained on exactly this text, so serving must build it the same way;
the training recipe imports :func:`build_prompt` and :func:`read_task` rather than keeping a copy.

**What the check is about** (:func:`read_task`) comes from the context's structure and from what
the request asks of it (:func:`truthlens.detector.reading.requests.what_it_asks`, read from the request's
grammar, never from a list of a benchmark's words):

- ``record``: one passage of structured data (JSON, a Python literal, CSV rows, ``key: value``
  lines);
- ``article``: a request for the whole context rather than something in it ("Summarise the piece
  on the floods", "TL;DR", "What is this about?", none at all), over one passage longer than
  :data:`ARTICLE_CHARS`, or over several passages when it names nothing they hold;
- ``passages``: everything else (a question over passages, "Give me the CFO's name", "Tell me
  whether they deliver"), and any request without context.

A request no context can ground (an opinion, an assessment, a translation, a creative piece, a
rewrite for another reader) is read as such (:attr:`Task.name` ``ungroundable``): the gateway
answers it unchecked with its own reason; checked directly, it is checked as sent.

For a record or an article whose request is not a question, the model reads its shape's one
**canonical instruction** (:data:`SUMMARY_INSTRUCTION`, :data:`RECORD_INSTRUCTION`: the ones it was
trained on), whatever the application wrote: the model and the learned verdict were fitted on one
wording per shape, and with any other wording summaries were judged at chance (a summary's answer
is scored under two wordings the model learned summaries with, :data:`MODEL_INSTRUCTIONS`, and the
probabilities averaged). A real question keeps its own words, without what only wraps it
(:func:`the_question`: "Question: ...", "Answer in one sentence.", "Read the passages and answer:
..."). A request that repeats the document (an application that sends the article in its user
message as well as in the passages) is read without it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from truthlens.detector.reading.requests import Asks, asks_something, names_content, names_the_whole, what_it_asks
from truthlens.detector.text import sentences, stem, terms
from truthlens.detector.types import DetectionInput

TEMPLATE_NAME = "lettucedetect-qa-en"

# lettucedetect/prompts/qa_prompt_en.txt (no trailing newline); the pieces around the
# passage block are kept apart so the chunk planner can measure them.
_HEAD = (
    "Briefly answer the following question:\n{question}\n"
    "Bear in mind that your response should be strictly based on the following {num_passages} passages:\n"
)
_TAIL = (
    "\nIn case the passages do not contain the necessary information to answer the question, "
    'please reply with: "Unable to answer based on given passages."\noutput:'
)

Shape = Literal["passages", "article", "record"]
SHAPES: tuple[Shape, ...] = ("passages", "article", "record")

# The instructions the shipped model was trained on for these shapes (RAGTruth's, as the
# training recipe sends them: training/corpus/ragtruth.py).
SUMMARY_INSTRUCTION = "Summarize the following news article."
RECORD_INSTRUCTION = (
    "Write an objective overview about the following local business based only on the provided "
    "structured data in the JSON format."
)
# The wordings the model's probabilities are averaged over for a canonical instruction: the
# shipped model learned RAGTruth's summaries under RAGTruth's wording and HaluEval's under
# HaluEval's, and its token probabilities follow the wording. Neither alone does as well on both
# (dev parts, python -m bench.summary_instruction, bench/results/summary_instruction-dev.txt:
# RAGTruth's alone takes HaluEval's balanced accuracy from 0.700 to 0.600; HaluEval's alone flags
# 50% of RAGTruth's faithful summaries, against 25%). Each is a model pass: a summary costs two,
# about 1.5x the CPU of a one-wording check.
MODEL_INSTRUCTIONS: dict[str, tuple[str, ...]] = {
    SUMMARY_INSTRUCTION: (SUMMARY_INSTRUCTION, "Summarize the article."),
}
ARTICLE_CHARS = 300  # shorter: a fact or two to answer from, not a document to summarise

# The word sets below are compared with :func:`_words`' stems, so they are kept as stems too.
_NUMBER_WORDS = frozenset(stem(w) for w in (
    "one two three four five six seven eight nine ten twelve fifteen twenty thirty fifty hundred single few "
    "several couple").split())
# A question: a question mark, a wh-word anywhere ("... starring which singer"), or a sentence
# that opens with an auxiliary ("Is it open on Sundays").
_INTERROGATIVE = re.compile(
    r"\?|\b(?:who|what|when|where|which|why|how|whose|whom)\b|"
    r"(?:^|[.!:;\n]\s*)(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had)\b",
    re.I,
)
# "Question: ...", "Q: ...", "### Question\n...", "<question>...</question>": up to an answer label.
_LABELLED_QUESTION = re.compile(
    r"<question>\s*(?P<x>.*?)\s*</question>|"
    r"(?:^|\n)[ \t#*>-]*(?:question|query|q)[ \t]*(?:[:：][ \t]*\n*|\n+)(?P<q>.+?)"
    r"(?=\n[ \t#*>-]*(?:answer|a)[ \t]*(?:[:：]|\n|$)|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_INSTRUCTION_WORDS = frozenset(stem(w) for w in
    """answer answers respond reply cite keep use using read write explain please thanks thank hi hello hey
    brief briefly concise concisely short sure note source sources word words sentence sentences helpful
    assistant instructions only according per based lot much cheers appreciate appreciated""".split())
MAX_WRAPPER_PARTS = 4  # sentences or lines of a wrapped question; a longer request is read as sent
# An opening that only asks to be told ("Could you please tell me ...", "I need to know ..."),
# unless what follows is a topic rather than a question ("Tell me about the tower").
_ASKING_LEAD = re.compile(
    r"^(?:(?:could|can|would|will)\s+you\s+(?:please\s+)?(?:tell|show)\s+me|(?:please\s+)?tell\s+me|"
    r"i(?:'d|\s+would)?\s+(?:need|want|like|love)\s+to\s+know|i(?:'m|\s+am)\s+wondering|i\s+wonder)"
    r"\b[\s,:]*(?!about\b)(?=\S)",
    re.IGNORECASE,
)
_PASSAGE_WORDS = frozenset(stem(w) for w in (
    "article articles text texts passage passages document documents docs context sources source information "
    "above below provided given").split())
_ASKING_WORDS = frozenset(stem(w) for w in
                          "who whom whose what when where which why how is are was were do does did".split())
MAX_LEAD_WORDS = 8  # an opening clause before a comma that only points at the passages
# A speaker's turn ("[Human]:", "User:", "Assistant:"): the request is a conversation.
_SPEAKER = re.compile(r"\[(?:human|user|assistant|system)\]\s*:|(?:^|\n)\s*(?:user|assistant|human)\s*:", re.I)
# A line that opens a context section ("Context:", "## Sources", "**Documents:**").
_CONTEXT_SECTION = re.compile(
    r"\n[ \t#*>]*(?:context|contexts|retrieved context|documents?|passages?|sources?|information|background"
    r"|knowledge|search results|excerpts?)[ \t*]*(?::|\n)", re.IGNORECASE)
_KEY_VALUE_LINE = re.compile(r"^\s*(?:[-*•#]\s*)?[^\W\d][\w .()'/&-]{0,60}:\s*\S")


TaskName = Literal["question", "summary", "record", "ungroundable"]


@dataclass(frozen=True, slots=True)
class Task:
    """What a check is about: its shape and the question the model's prompt (and the verdict)
    read: the request's own question, or the shape's canonical instruction; ``asks``: what the
    request asks (:func:`~truthlens.detector.reading.requests.what_it_asks`)."""

    shape: Shape
    question: str
    asks: Asks = field(default="question", compare=False)

    @property
    def name(self) -> TaskName:
        """How the request was read, as the client is told (``x-truthlens-task``)."""
        if self.asks == "ungroundable":
            return "ungroundable"
        if self.shape == "article":
            return "summary"
        if self.shape == "record" and self.question == RECORD_INSTRUCTION:
            return "record"
        return "question"


def read_task(context: Sequence[str], question: str) -> Task:
    """The task shape and the question to check ``context`` against (module docstring)."""
    if not any(p.strip() for p in context):
        return Task("passages", question)  # nothing to summarise: the question is all there is
    request = without_context_section(without_document(question, context))
    asks = what_it_asks(request, context)
    if asks == "ungroundable":
        return Task("passages", question, asks)
    if len(context) == 1 and is_record(context[0]):
        # over a record, only a request that asks something is a question (not a label such as
        # "Data-to-text:" whose words the record's field names happen to use)
        asked = asks == "question" and asks_something(request)
        return Task("record", _own_question(question, context) if asked else RECORD_INSTRUCTION,
                    "question" if asked else "whole")
    if asks == "whole" and _the_whole_fits(request, context):
        return Task("article", SUMMARY_INSTRUCTION, asks)
    return Task("passages", _own_question(question, context), "question")


def _own_question(question: str, context: Sequence[str]) -> str:
    """The question the model reads: without a document it repeats and a context section typed
    into it, less what only wraps it."""
    return the_question(without_context_section(without_document(question, context, ARTICLE_CHARS)))


def _the_whole_fits(request: str, context: Sequence[str]) -> bool:
    """A request for the whole is read so over one passage long enough to be a document, or over
    several (where the request is nearly always a question) when it names nothing they hold; a
    request that names the whole ("Summarise.") is one over any context."""
    if len(context) == 1:  # a short one is a fact or two to answer from, unless the request names the whole
        return len(context[0].strip()) > ARTICLE_CHARS or names_the_whole(request)
    return not names_content(request, context) and (sum(len(p.strip()) for p in context) > ARTICLE_CHARS
                                                     or names_the_whole(request))


def model_questions(question: str) -> tuple[str, ...]:
    """The questions the model scores a checked item's answer under (its probabilities averaged):
    a canonical instruction's wordings (:data:`MODEL_INSTRUCTIONS`), else the question itself."""
    return MODEL_INSTRUCTIONS.get(question, (question,))


def the_question(request: str) -> str:
    """The question a short request wraps, as the model was trained on questions (bare): a
    labelled one ("Question: ...", "Q: ...", "Query: ...", ``<question>...</question>``, a
    "Question" heading), else the request without its sentences that ask nothing of their own
    ("Answer in one sentence.", "Please cite the passages you used."), without an opening
    instruction that ends in a colon or a comma ("Read the passages and answer: ...", "Using the
    documents above, ...") and without an opening that only asks to be told ("Could you please
    tell me ...", "I need to know ..."). A conversation
    ("[Human]: ... [Assistant]: ..."), a request of more than :data:`MAX_WRAPPER_PARTS` sentences
    and one with nothing to take away are kept as sent, byte for byte."""
    if _SPEAKER.search(request):
        return request
    labelled = _LABELLED_QUESTION.search(request)
    text = (labelled.group("q") or labelled.group("x")) if labelled else request
    parts = [text[s:e] for s, e in sentences(text)]
    if len(parts) > MAX_WRAPPER_PARTS:
        return request
    kept = [p for p in parts if not _asks_nothing(p)]
    changed = labelled is not None or 0 < len(kept) < len(parts)
    if changed:
        text = " ".join(kept or parts)
    head, colon, rest = text.partition(":")  # "Read the passages and answer: ..."
    if colon and rest.strip() and not _own_words(head):
        text, changed = rest, True
    else:  # "Using the documents above, ...", not "Which writer, A or B, ..." nor "In 2019, ..."
        head, comma, rest = text.partition(",")
        words = _words(head)
        if (comma and rest.strip() and len(head.split()) <= MAX_LEAD_WORDS and not _own_words(head)
                and words & _PASSAGE_WORDS and not words & _ASKING_WORDS):
            text, changed = rest, True
    text = text.strip()
    lead = _ASKING_LEAD.match(text)
    if lead:
        text, changed = text[lead.end():].strip(), True
    return text if changed and _own_words(text) else request


def _asks_nothing(sentence: str) -> bool:
    """An instruction or courtesy around a question ("Answer in one sentence.", "Thanks!"): no
    words of its own, not a question itself, and words that tell how to answer or greet."""
    return not _own_words(sentence) and not _is_question(sentence) and bool(_words(sentence) & _INSTRUCTION_WORDS)


def checked(item: DetectionInput) -> DetectionInput:
    """``item`` as the detector checks it: its question replaced by :func:`read_task`'s (the same
    item when the question is kept)."""
    question = read_task(item.context, item.question).question
    return item if question == item.question else replace(item, question=question)


def _is_question(request: str) -> bool:
    return _INTERROGATIVE.search(request) is not None


def _own_words(request: str) -> set[str]:
    """The words of a sentence that wraps a question that are its own: not stop words, not words
    that tell how to answer or point at the passages, not numbers (length limits: "in 3
    sentences", "two articles")."""
    words = _words(request) - _INSTRUCTION_WORDS - _PASSAGE_WORDS
    return {w for w in words if not w[0].isdigit() and w not in _NUMBER_WORDS}


def without_context_section(question: str) -> str:
    """``question`` up to a line that opens a context section of its own ("Context: ...",
    "Sources:"), when there is a question before it: the request's context is the passages, and
    text the user labelled as context inside the question (a template's label typed into its
    question slot) is not read beside them as if it were the question."""
    m = _CONTEXT_SECTION.search(question)
    if m is None or not _words(question[:m.start()]):
        return question
    return question[:m.start()].rstrip()


def without_document(question: str, context: Sequence[str], min_chars: int = 40) -> str:
    """``question`` with any passage of ``context`` (of ``min_chars`` or more) it repeats taken out
    (whitespace-blind; the question as sent when it repeats none). The question the model reads
    loses only documents (over :data:`ARTICLE_CHARS`): a conversation that quotes a fact of its
    knowledge keeps it."""
    if not question or not context:
        return question
    text = " ".join(question.split())
    found = False
    for passage in context:
        flat = " ".join(passage.split())
        if len(flat) >= max(min_chars, 40) and flat in text:
            text, found = text.replace(flat, " "), True
    return " ".join(text.split()) if found else question


def is_record(text: str) -> bool:
    """Whether ``text`` is structured data rather than prose: a JSON or Python literal object or
    list, comma- or tab-separated rows, or mostly ``key: value`` lines."""
    text = text.strip()
    if not text:
        return False
    if text[0] in "{[" and text[-1] in "}]":
        try:
            json.loads(text)
            return True
        except ValueError:
            pass
        try:
            return isinstance(ast.literal_eval(text), (dict, list))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return False
    # Comment lines ("# title: ...") and rules ("---") are neither rows nor prose.
    lines = [line for line in text.splitlines()
             if any(c.isalnum() for c in line) and not line.lstrip().startswith("#")]
    # Rows and fields do not end like sentences; prose lines (a transcript, a poem) mostly do.
    if len(lines) < 3 or sum(line.rstrip().endswith((".", "!", "?")) for line in lines) > 0.3 * len(lines):
        return False
    for sep in (",", "\t", "|"):
        counts = [line.count(sep) for line in lines]
        if counts[0] >= 1 and sum(c == counts[0] for c in counts) >= 0.9 * len(lines):
            return True
    return sum(bool(_KEY_VALUE_LINE.match(line)) for line in lines) >= 0.6 * len(lines)


def _words(text: str) -> set[str]:
    """The stems of ``text``'s words that say something, and its numbers (:func:`~truthlens.detector.text.terms`)."""
    return terms(text)


def passage_line(index: int, passage: str) -> str:
    """One passage as the template numbers it (``index`` counts from 0)."""
    return f"passage {index + 1}: {passage}"


def build_prompt(context: Sequence[str], question: str) -> str:
    """The prompt (first segment of the pair encoding) for passages and a question."""
    block = "\n".join(passage_line(i, p) for i, p in enumerate(context))
    return prompt_head(question, len(context)) + block + _TAIL


def prompt_head(question: str, num_passages: int) -> str:
    """Everything before the first passage."""
    return _HEAD.format(question=question, num_passages=num_passages)


def prompt_tail() -> str:
    """Everything after the last passage."""
    return _TAIL
