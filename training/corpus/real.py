"""``python -m training.corpus.real``: the training mix of real text and the synthetic generator.

Writes ``train.jsonl`` (shuffled), ``dev.jsonl`` (HaluEval dev fold, for the threshold and
model choice) and ``mix.json`` (what went in). Sources, all HaluEval train folds only:

- ``qa``: knowledge + question; right answer, hallucinated answer (novel-word spans), faithful twin;
- ``dialogue``: knowledge + dialogue history; right and hallucinated response;
- ``summarization``: the document sentences most related to the summaries; right and hallucinated summary;
- ``perturbed``: sentences of QA knowledge and news articles restated, most with one planted
  contradiction (:mod:`training.corpus.perturb`), among distractor passages;
- ``synthetic``: the template generator (:mod:`training.corpus.splits`), for coverage of units,
  money, dates, paraphrase and unanswerable questions.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

from training.corpus import halueval, lexical, perturb
from training.corpus.builder import Example
from training.corpus.splits import generate, write_jsonl


def _name_question(sentence: str, rng: random.Random) -> str:
    names = perturb.PERSON_OR_PLACE.findall(sentence)
    subject = names[0] if names else " ".join(sentence.split()[:3])
    return rng.choice(
        (
            "What does the passage say about {s}?",
            "Tell me about {s}.",
            "What do we know about {s}?",
            "Summarize what is known about {s}.",
        )
    ).format(s=subject)


def perturbed_examples(root: Path, n: int, rng: random.Random) -> list[Example]:
    sources: list[tuple[str, str, str]] = []
    for i, row in halueval.training_items("qa", ("train",), root):
        sources.append((f"perturbed-qa-{i}", row["knowledge"], ""))
    for i, row in halueval.training_items("summarization", ("train",), root):
        sents = lexical.sentences(row["document"])
        start = rng.randrange(max(1, len(sents) - 6))
        sources.append((f"perturbed-news-{i}", " ".join(sents[start : start + 6]), ""))
    rng.shuffle(sources)
    sources = [(ident, passage, _name_question(passage, rng)) for ident, passage, _ in sources[: int(n * 1.3)]]
    return list(perturb.examples_from_passages(sources, rng))[:n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.corpus.real", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--halueval", type=Path, default=halueval.DEFAULT_DIR, help="where the HaluEval files are (fetched if missing)"
    )
    parser.add_argument("--out", type=Path, default=Path("training/output/real"))
    parser.add_argument("--qa", type=int, default=5000, help="HaluEval QA train items")
    parser.add_argument("--dialogue", type=int, default=3000, help="HaluEval dialogue train items")
    parser.add_argument("--summarization", type=int, default=2000, help="HaluEval summarization train items")
    parser.add_argument("--perturbed", type=int, default=8000, help="examples planted in real passages")
    parser.add_argument("--synthetic", type=int, default=4000, help="template-generator examples")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)

    root = halueval.fetch(args.halueval)
    rng = random.Random(args.seed)
    train: list[Example] = []
    for task, limit in (("qa", args.qa), ("dialogue", args.dialogue), ("summarization", args.summarization)):
        train.extend(halueval.examples(task, ("train",), root, limit=limit))  # type: ignore[arg-type]
    train.extend(perturbed_examples(root, args.perturbed, rng))
    train.extend(generate("train", args.synthetic, seed=args.seed, word_budget=200))
    rng.shuffle(train)
    write_jsonl(iter(train), args.out / "train.jsonl")
    dev: list[Example] = []
    for task in halueval.TASKS:
        dev.extend(halueval.examples(task, ("dev",), root))
    write_jsonl(iter(dev), args.out / "dev.jsonl")
    mix = {
        "train": dict(Counter(ex.domain for ex in train)),
        "train_hallucinated": sum(ex.hallucinated for ex in train),
        "kinds": dict(Counter(s.kind for ex in train for s in ex.labels)),
        "dev": dict(Counter(ex.domain for ex in dev)),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    (args.out / "mix.json").write_text(json.dumps(mix, indent=2))
    print(json.dumps(mix, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
