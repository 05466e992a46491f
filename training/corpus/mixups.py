"""In-context mix-ups for training: the bench's rules (:mod:`bench.mixup_rules`) run over the
contexts of the **train parts** only.

:mod:`bench.mixups` measures the detector on mix-ups written from the dev parts' contexts (a
fact the context states, put in the wrong place: a year of another event, a count of another
fact, a name moved between clauses, a negation dropped or added, a comparison reversed, a unit
changed) and on faithful rewordings of the same sentences. What is fitted on them must never
see those contexts, so this module draws its answers from:

- RAGTruth's odd ``source_id`` train part (``(source_id // 2) % 5 != 0``: QA passages, news);
- HaluEval's train folds (line ``i % 10`` not 0 or 1: QA knowledge, the news articles' opening
  15 sentences; the one-name answers from the QA items);

and leaves out any context that one of the dev or evaluation parts also holds (HaluEval repeats
some knowledge paragraphs). Each wrong answer keeps the characters that carry the error (its
span); each faithful one has none. Deterministic by seed.

    python -m training.corpus.mixups --per-kind 200 --out training/output/mixups/train.jsonl

writes them as the corpus's examples (:mod:`training.corpus.splits`' JSONL; domain ``mixup``,
each label's kind the error's: date, number, entity, negation, relation, unit).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.mixup_rules import Case
from bench.mixups import sample, sources
from training.corpus import halueval, ragtruth
from training.corpus.builder import Example, LabelSpan
from training.corpus.splits import write_jsonl
from training.corpus.values import HallucinationKind
from training.scoring import Case as ScoredCase
from truthlens.detector.types import DetectionInput

SEED = 3  # the bench's halves use seeds 1 (tuning) and 2 (held-out)

# What each kind of mix-up gets wrong, as the corpus labels a span.
LABEL_KINDS: dict[str, HallucinationKind] = {
    "year of another event": "date",
    "count of another fact": "number",
    "name moved between clauses": "entity",
    "attribute to a sibling": "entity",
    "negation dropped": "negation",
    "negation added": "negation",
    "comparison reversed": "relation",
    "unit changed": "unit",
    "title abbreviated": "entity",
    "one-name answer": "entity",
}


def generate(per_kind: int, seed: int = SEED, ragtruth_dir: Path = ragtruth.DEFAULT_DIR,
             halueval_dir: Path = halueval.DEFAULT_DIR) -> list[Case]:
    """Up to ``per_kind`` wrong answers of each kind and as many faithful ones of each kind, from
    the train parts' contexts (none that a dev or evaluation part holds too)."""
    held = {s.context for s in sources(None, ragtruth_dir, halueval_dir, folds=("dev", "eval"))}
    srcs = [s for s in sources(None, ragtruth_dir, halueval_dir, folds=("train",)) if s.context not in held]
    root = halueval.fetch(halueval_dir)
    qa_rows = ((i, row) for i, row in halueval.items("qa", ("train",), root) if (row["knowledge"],) not in held)
    return sample(srcs, qa_rows, per_kind, random.Random(seed))


def as_scored(cases: Sequence[Case]) -> list[ScoredCase]:
    """The cases as the verdict's fit reads answers (:mod:`training.verdict_data`)."""
    return [ScoredCase(DetectionInput(c.context, c.question, c.answer), c.wrong, ((c.start, c.end),) if c.wrong else ())
            for c in cases]


def as_examples(cases: Sequence[Case]) -> list[Example]:
    """The cases as the corpus's examples (what :mod:`training.train` reads)."""
    return [
        Example(f"mixup-{i}", "train", "mixup", c.context, c.question, c.answer,
                (LabelSpan(c.start, c.end, LABEL_KINDS[c.kind]),) if c.wrong else ())
        for i, c in enumerate(cases)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.corpus.mixups", description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=200)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--out", type=Path, required=True, help="JSONL of the corpus's examples")
    args = parser.parse_args(argv)
    cases = generate(args.per_kind, args.seed, args.ragtruth, args.halueval)
    n = write_jsonl(iter(as_examples(cases)), args.out)
    wrong = sum(c.wrong for c in cases)
    print(f"{n} answers ({wrong} wrong, {n - wrong} faithful) from the train parts' contexts -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
