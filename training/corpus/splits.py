"""The corpus splits and their JSONL files.

``train`` and ``test`` (in-distribution) draw from the training domains and templates with
different seeds; ``heldout`` draws from domains that training never sees and, for the
training domains, only from the reserved templates, lead-ins and padding prose.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Literal

from training.corpus.builder import Example, ExampleBuilder, LabelSpan
from training.corpus.domains import HELDOUT_DOMAINS, TRAIN_DOMAINS

SplitName = Literal["train", "test", "heldout"]
SPLITS: tuple[SplitName, ...] = ("train", "test", "heldout")


def generate(
    split: SplitName, n: int, *, seed: int, word_budget: int, hallucination_rate: float = 0.5
) -> Iterator[Example]:
    """``n`` examples of ``split``; the same arguments always give the same examples."""
    rng = random.Random(f"{split}:{seed}")
    builder = ExampleBuilder("heldout" if split == "heldout" else "train", rng, word_budget)
    domains = TRAIN_DOMAINS + HELDOUT_DOMAINS if split == "heldout" else TRAIN_DOMAINS
    for i in range(n):
        if split == "heldout" and rng.random() < 0.5:
            domain = rng.choice(HELDOUT_DOMAINS)
        else:
            domain = rng.choice(domains if split != "heldout" else TRAIN_DOMAINS)
        yield builder.build(domain, f"{split}-{seed}-{i}", hallucinate=rng.random() < hallucination_rate)


def write_jsonl(examples: Iterator[Example], path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as f:
        for ex in examples:
            f.write(json.dumps(asdict(ex), ensure_ascii=False) + "\n")
            count += 1
    return count


def read_jsonl(path: Path) -> list[Example]:
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append(Example(
                id=d["id"], split=d["split"], domain=d["domain"], context=tuple(d["context"]),
                question=d["question"], answer=d["answer"], labels=tuple(LabelSpan(**s) for s in d["labels"]),
            ))
    return out
