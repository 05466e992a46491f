"""AttributionBench (Li et al. 2024; dataset card: Apache-2.0): claims of LLM answers judged against references.

From the GitHub repository ``OSU-NLP-Group/AttributionBench``, which holds three files under
``data/``: the in-domain dev split (``dev_all_subset_balanced.jsonl``), a 500-row sample of the
in-domain test split and the out-of-domain test split. Its training split (21.9k rows) is on a
model hub only, not in the repository. Each row: ``question``, ``claim`` (one or more sentences
of an answer), ``references`` (the passages cited for it), ``attribution_label``
(``attributable`` / ``not attributable``), ``src_dataset``.

Only the **dev split** is read. The two test files are the benchmark's evaluation sets and are
refused by name (:func:`load` raises on them). Rows of ``src_dataset`` ``LFQA`` are left out:
they are the LFQA-Verification annotations, which carry no licence of their own (training
README), and rows of ``BEGIN`` (a dialogue benchmark) are left out wherever they occur.

**Sentence labels to token labels.** A claim judged *not attributable* is labelled on its
content words the references and the question do not contain (:func:`lexical.novel_spans`:
what a reader could not find), or, when every content word is there (the references hold the
words but not the claim: a relation or role error), on the claim from its first content word
to its last. Labelling the copied words of a claim with new words in it would teach the model to
flag words the references state; labelling only stop words would teach nothing. Attributable
claims are faithful. The source document is the question: every claim about one question goes to
the same part.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from training.corpus import lexical
from training.corpus.builder import Example, LabelSpan

DEV = Path("data/dev_all_subset_balanced.jsonl")
EVALUATION_FILES = frozenset({"test_ood_all_subset_balanced.jsonl", "test_all_subset_balanced_sampled500.jsonl"})
LEFT_OUT_SOURCES = frozenset({"LFQA", "BEGIN"})
NOT_ATTRIBUTABLE = "not attributable"
_CITATION = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")


def claim_spans(claim: str, references: list[str], question: str) -> list[tuple[int, int]]:
    """The character spans labelled on a claim its references do not support (module note).

    Citation markers ("[1]", "[2, 3]") are never labelled: they are the answer's pointers to
    its references, not claims."""
    cited = [m.span() for m in _CITATION.finditer(claim)]
    ws = [w for w in lexical.words(claim) if not any(s <= w.start < e for s, e in cited)]
    content = [i for i, w in enumerate(ws) if lexical.is_content(w)]
    vocab = lexical.vocabulary([*references, question])
    novel = [i for i in content if ws[i].stem not in vocab]
    if novel:
        return lexical.runs(ws, novel, max_gap_words=2)
    return [(ws[content[0]].start, ws[content[-1]].end)] if content else [(0, len(claim))]


def document_key(question: str, references: list[str]) -> str:
    """The question, or (a row without one) its first reference."""
    return "attributionbench/" + " ".join((question or references[0][:300]).lower().split())


def load(root: Path, path: Path = DEV) -> Iterator[tuple[str, Example]]:
    """``(document key, example)`` for each kept row of the dev split."""
    if path.name in EVALUATION_FILES:
        raise ValueError(f"{path.name} is AttributionBench's evaluation set: never trained on")
    with (root / path).open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["src_dataset"] in LEFT_OUT_SOURCES:
                continue
            references = [r.strip() for r in row["references"] if r and r.strip()]
            claim = row["claim"].strip()
            if not references or not claim:
                continue
            question = row["question"].strip()
            spans = claim_spans(claim, references, question) if row["attribution_label"] == NOT_ATTRIBUTABLE else []
            yield document_key(question, references), Example(
                id=f"attributionbench-{row['id']}", split="train", domain="attributionbench",
                context=tuple(references), question=question, answer=claim,
                labels=tuple(LabelSpan(s, e, "unsupported") for s, e in spans),
            )
