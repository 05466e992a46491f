"""Writes ``focus_sample.json``, the generated cases of ``tests/detector/test_focus_sample.py``.

The bench's own rules (:mod:`bench.mixup_rules`) applied to contexts the focus rule was not
built on: one-name answers from HaluEval QA train-fold lines ``i % 10 == 9``, titles from
RAGTruth train contexts with ``source_id % 4 == 3`` and the first 15 sentences of HaluEval
summarization train-fold lines ``i % 10 == 9``; seed 29. The rule was tuned on the bench's
tuning split and on train-fold lines ``i % 10`` in 2..8 (RAGTruth ``source_id % 4 == 1``).

    python tests/detector/data/make_focus_sample.py tests/detector/data/focus_sample.json

``--more`` writes ``focus_sample_more.json``: the next 50 one-name pairs of the same seeded
draw (written before the bridge rule of :mod:`truthlens.detector.facts.short_answers.bridges`):

    python tests/detector/data/make_focus_sample.py --more tests/detector/data/focus_sample_more.json

``--third`` writes ``focus_sample_kinds.json``: the 50 one-name pairs after those (written before
the name-kind rule of :mod:`truthlens.detector.facts.short_answers.name_kinds`):

    python tests/detector/data/make_focus_sample.py --third tests/detector/data/focus_sample_kinds.json
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from bench.mixup_rules import SENTENCE_CUT, Case, Source, sentences, short_answers, titles
from bench.mixups import write
from training.corpus import halueval, ragtruth

PAIRS = 50  # one-name answers (each with its right name)
TITLE_PAIRS = 30


def main(out: Path, more: bool = False, third: bool = False) -> None:
    rng = random.Random(29)
    root = halueval.fetch(halueval.DEFAULT_DIR)
    rows = [(i, r) for i, r in halueval.items("qa", ("train",), root) if i % 10 == 9]
    cases: list[Case] = []
    for wrong, right in short_answers(rows, rng):
        cases += [wrong, right]
        if len(cases) >= 2 * PAIRS * (3 if third else 2 if more else 1):
            break
    if more or third:  # (the pairs after the first sample's, or after the second's)
        write(cases[2 * PAIRS * (2 if third else 1):], out)
        return
    srcs: list[Source] = []
    seen: set[str] = set()

    def add(key: str, context: tuple[str, ...], question: str) -> None:
        kept = tuple(s for p in context for s in sentences(p))
        if key not in seen and len(kept) >= 3:
            seen.add(key)
            srcs.append(Source(key, context, question, kept))

    for task in ("qa", "summary"):
        for r in ragtruth.responses(task, ("train",), ragtruth.DEFAULT_DIR):
            if r.source_id % 4 == 3:
                add(f"ragtruth-{task}-{r.source_id}", r.context, r.question)
    for i, row in halueval.items("summarization", ("train",), root):
        if i % 10 == 9:
            add(f"halueval-summarization-{i}", (" ".join(SENTENCE_CUT.split(row["document"].strip())[:15]),), "")
    rng.shuffle(srcs)
    taken = 0
    for src in srcs:
        for wrong, right in titles(src, rng):
            cases += [wrong, right]
            taken += 1
        if taken >= TITLE_PAIRS:
            break
    write(cases, out)


if __name__ == "__main__":
    main(Path(sys.argv[-1]), more="--more" in sys.argv[1:-1], third="--third" in sys.argv[1:-1])
