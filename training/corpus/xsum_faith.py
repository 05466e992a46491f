"""XSum hallucination annotations (Maynez et al., ACL 2020; CC BY 4.0): span labels on news summaries.

From the GitHub repository ``google-research-datasets/xsum_hallucination_annotations``, file
``hallucination_annotations_xsum_summaries.csv``: 500 XSum articles × 5 summaries (four
summarisation models and the reference, ``Gold``), each read by three annotators who marked
the spans the article does not support. One row per annotator and span; offsets are 1-based
(``summary[start - 1 : end - 1]``) into the summary with its ``\\'`` escapes undone; a row with
offset -1 means that annotator marked nothing.

A character counts as unsupported when at least two of the three annotators marked it (the
authors report per-annotator spans; the majority keeps the spans people agree on). The
articles come from AggreFact's files (:mod:`training.corpus.xsum_articles`).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from training.corpus.builder import Example, LabelSpan
from training.corpus.halueval import SUMMARY_QUESTIONS

ANNOTATIONS = "hallucination_annotations_xsum_summaries.csv"
MAJORITY = 2


def unescape(summary: str) -> str:
    return summary.replace("\\'", "'").replace('\\"', '"')


def majority_spans(
    length: int, marks: list[tuple[int, int]], annotators: int, need: int = MAJORITY
) -> list[tuple[int, int]]:
    """Character runs marked by at least ``need`` annotators (``marks`` as 0-based ``(start, end)``)."""
    if annotators < need:
        need = annotators
    votes = [0] * length
    for start, end in marks:
        for i in range(max(0, start), min(length, end)):
            votes[i] += 1
    spans: list[tuple[int, int]] = []
    start = -1
    for i, v in enumerate([*votes, 0]):
        if v >= need and start < 0:
            start = i
        elif v < need and start >= 0:
            spans.append((start, i))
            start = -1
    return spans


def _located(summary: str, text: str, start: int, end: int) -> tuple[int, int] | None:
    if summary[start - 1 : end - 1] == text:
        return start - 1, end - 1
    found = summary.find(text)
    return (found, found + len(text)) if found >= 0 and text else None


def document_key(bbcid: str) -> str:
    return f"xsum/{bbcid}"


def load(root: Path, articles: dict[str, str]) -> Iterator[tuple[str, Example]]:
    """``(document key, example)`` for each annotated summary whose article is in ``articles``."""
    marks: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    annotators: dict[tuple[str, str], set[str]] = defaultdict(set)
    summaries: dict[tuple[str, str], str] = {}
    with (root / ANNOTATIONS).open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            key = (row["bbcid"], row["system"])
            summary = unescape(row["summary"])
            summaries[key] = summary
            annotators[key].add(row["worker_id"])
            start, end = int(row["hallucinated_span_start"]), int(row["hallucinated_span_end"])
            if start < 0:
                continue
            located = _located(summary, unescape(row["hallucinated_span"]), start, end)
            if located is not None:
                marks[key].append(located)
    for n, ((bbcid, system), summary) in enumerate(sorted(summaries.items())):
        article = articles.get(bbcid)
        if article is None:
            continue
        spans = majority_spans(len(summary), marks[bbcid, system], len(annotators[bbcid, system]))
        yield document_key(bbcid), Example(
            id=f"xsum-{bbcid}-{system}",
            split="train",
            domain="xsum_faith",
            context=(article,),
            question=SUMMARY_QUESTIONS[n % len(SUMMARY_QUESTIONS)],
            answer=summary,
            labels=tuple(LabelSpan(s, e, "unsupported") for s, e in spans),
        )
