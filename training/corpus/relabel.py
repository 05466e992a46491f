"""HaluEval QA and dialogue labelled on what makes the answer wrong, not on what is new.

The first recipe labelled a hallucinated answer on its words the knowledge does not contain.
A faithful paraphrase is exactly that, so the model learned "a word the context lacks is a
hallucination" and flagged paraphrases. Here the label is what differs from the item's *right*
answer: the hallucinated answer's content words that neither the right answer nor the question
contain ("First for Women" against "Arthur's Magazine" for "which magazine started first?"),
falling back to the words missing from the right answer alone when the question supplies them,
and to the whole answer only when nothing differs. The right answer, its full-sentence faithful
twin and a restatement in the question's own words are labelled supported (0).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from training.corpus import halueval, lexical
from training.corpus.builder import Example, LabelSpan

_MAX_GAP_WORDS = 2


def differing_spans(answer: str, right: str, question: str) -> list[tuple[int, int]]:
    """Character spans of ``answer`` that the right answer does not say (nor ``question``, which
    for a dialogue is its knowledge: a reply differs from the right one in many words, and only
    those the knowledge lacks are its false claims)."""
    right_vocab = lexical.vocabulary([right])
    both = lexical.vocabulary([right, question])
    ws = lexical.words(answer)
    yes_no = right.lower().strip(" .!") in ("yes", "no")
    if yes_no and ws and ws[0].text.lower() in ("yes", "no") and ws[0].text.lower() != right.lower().strip(" .!"):
        return [(ws[0].start, ws[0].end)]  # the polarity word is the claim
    for vocab in (both, right_vocab):
        flagged = [i for i, w in enumerate(ws) if lexical.is_content(w) and w.stem not in vocab]
        if flagged:
            return lexical.runs(ws, flagged, _MAX_GAP_WORDS)
    return [(0, len(answer.rstrip()))]


def examples(
    task: halueval.Task, folds: tuple[halueval.Fold, ...], root: Path = halueval.DEFAULT_DIR, *, limit: int = 0
) -> Iterator[Example]:
    """Right, hallucinated (labelled against the right answer) and, for QA, the faithful twin."""
    if task == "summarization":
        raise ValueError("summaries have no single right answer to diff against: use halueval.examples")
    for n, (i, row) in enumerate(halueval.training_items(task, folds, root)):
        if limit and n >= limit:
            return
        if task == "qa":
            context, question = (row["knowledge"],), row["question"]
            right, wrong = row["right_answer"].strip(), row["hallucinated_answer"].strip()
        else:
            context, question = (row["knowledge"],), row["dialogue_history"].strip()
            right, wrong = row["right_response"].strip(), row["hallucinated_response"].strip()
        split = halueval.fold_of(i)
        domain = f"halueval_{task}_relabelled"
        yield Example(f"relabel-{task}-{i}-right", split, domain, context, question, right, ())
        spans = differing_spans(wrong, right, question if task == "qa" else context[0])
        labels = tuple(LabelSpan(s, e, "unsupported") for s, e in spans)
        yield Example(f"relabel-{task}-{i}-hallucinated", split, domain, context, question, wrong, labels)
        if task == "qa":
            twin = halueval.faithful_twin(wrong, right, (*context, question))
            if twin is not None:
                yield Example(f"relabel-qa-{i}-twin", split, domain, context, question, twin, ())
