"""Domain classification: accuracy on public labelled requests the example sets were not built
from, and its cost per request.

Data (neither was read while writing the example sets in
``src/truthlens/gateway/policy/domain_examples/``):
- MMLU (Hendrycks et al., MIT licence; github.com/hendrycks/test, ``data/test/*.csv``): each
  question's text, labelled by its subject: medicine subjects → healthcare, accounting and
  economics → finance, law → legal, and physics, astronomy, geography, computer science,
  chemistry, religions, prehistory → none.
- Banking77 (PolyAI, CC BY 4.0; github.com/PolyAI-LDN/task-specific-datasets, ``banking_data``):
  bank customers' requests → support.
No public set here labels creative requests: that domain is not measured.

Folds: MMLU rows with an even index and Banking77's train.csv are the dev part (``min_similarity``
is chosen there); odd MMLU rows and Banking77's test.csv are the evaluation part (reported).

    python -m bench.domains --mmlu DIR/data/test --banking77 DIR/banking_data [--per-subject 40]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import statistics
import time
from collections import Counter
from pathlib import Path

import numpy as np

from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.gateway.policy.domains import BACKGROUND, DomainSet, decide, parse_domains
from truthlens.options import Section

SUBJECTS: dict[str | None, tuple[str, ...]] = {
    "healthcare": ("anatomy", "clinical_knowledge", "college_medicine", "medical_genetics", "professional_medicine",
                   "nutrition", "virology"),
    "finance": ("professional_accounting", "high_school_macroeconomics", "high_school_microeconomics", "econometrics"),
    "legal": ("professional_law", "international_law", "jurisprudence"),
    None: ("astronomy", "college_physics", "conceptual_physics", "high_school_computer_science",
           "high_school_geography", "high_school_chemistry", "world_religions", "prehistory"),
}
Labelled = list[tuple[str, str | None]]


def mmlu(folder: Path, fold: int, per_subject: int) -> Labelled:
    out: Labelled = []
    for label, subjects in SUBJECTS.items():
        for subject in subjects:
            with (folder / f"{subject}_test.csv").open(encoding="utf-8") as f:
                rows = [r[0] for i, r in enumerate(csv.reader(f)) if i % 2 == fold]
            out += [(q, label) for q in rows[:per_subject]]
    return out


def banking77(folder: Path, fold: int, limit: int) -> Labelled:
    with (folder / ("train.csv" if fold == 0 else "test.csv")).open(encoding="utf-8") as f:
        rows = [r["text"] for r in csv.DictReader(f)]
    step = max(1, len(rows) // limit)  # an even spread over the 77 intents (rows are grouped by intent)
    return [(t, "support") for t in rows[::step][:limit]]


def scores(domain_set: DomainSet, embedder: OnnxEmbedder, texts: list[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    labels = tuple(n for n, ts in domain_set.examples.items() for _ in ts) + (BACKGROUND,) * len(domain_set.background)
    examples = [t for ts in domain_set.examples.values() for t in ts] + list(domain_set.background)
    matrix = embedder.embed_sync(examples)
    return embedder.embed_sync(texts) @ matrix.T, labels


def accuracy(sims: np.ndarray, labels: tuple[str, ...], gold: list[str | None], min_similarity: float) -> float:
    found = [decide(row, labels, min_similarity).name for row in sims]
    return sum(f == g for f, g in zip(found, gold, strict=True)) / len(gold)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mmlu", type=Path, required=True, help="MMLU's data/test folder")
    p.add_argument("--banking77", type=Path, required=True, help="Banking77's banking_data folder")
    p.add_argument("--per-subject", type=int, default=40, help="questions per MMLU subject and fold")
    p.add_argument("--support", type=int, default=300, help="Banking77 requests per fold")
    a = p.parse_args()
    domain_set = parse_domains(Section({}, "domains"))
    embedder = OnnxEmbedder.load(cache_size=0)
    folds = {}
    for fold in (0, 1):
        data = mmlu(a.mmlu, fold, a.per_subject) + banking77(a.banking77, fold, a.support)
        sims, labels = scores(domain_set, embedder, [t for t, _ in data])
        folds[fold] = (data, sims, labels)
    dev_data, dev_sims, labels = folds[0]
    grid = [round(x, 2) for x in np.arange(0.10, 0.61, 0.05)]
    dev_acc = {m: accuracy(dev_sims, labels, [g for _, g in dev_data], m) for m in grid}
    best = max(grid, key=lambda m: dev_acc[m])
    print("min_similarity on the dev part: " + ", ".join(f"{m}: {dev_acc[m]:.3f}" for m in grid))
    print(f"chosen: {best} (shipped default {domain_set.min_similarity})")
    data, sims, labels = folds[1]
    gold = [g for _, g in data]
    for m in sorted({best, domain_set.min_similarity}):
        found = [decide(row, labels, m).name for row in sims]
        print(f"\nevaluation part, min_similarity {m}: accuracy {accuracy(sims, labels, gold, m):.3f} (n={len(gold)})")
        print("| gold \\ found | " + " | ".join(str(x) for x in [*domain_set.names, None]) + " | recall |")
        print("|---" * (len(domain_set.names) + 3) + "|")
        for g in [*domain_set.names, None]:
            row = Counter(f for f, gg in zip(found, gold, strict=True) if gg == g)
            n = sum(row.values())
            if n:
                cells = " | ".join(str(row.get(x, 0)) for x in [*domain_set.names, None])
                print(f"| {g} | {cells} | {row.get(g, 0) / n:.2f} |")
    # Cost: the whole classification of one request, as the gateway runs it (one embedding, the
    # comparison with every example), on requests of the evaluation part, one at a time.
    asyncio.run(_cost(domain_set, embedder, [t for t, _ in data][:200]))


async def _cost(domain_set: DomainSet, embedder: OnnxEmbedder, texts: list[str]) -> None:
    await domain_set.classify("warm up", embedder)
    took = []
    for text in texts:
        start = time.perf_counter()
        await domain_set.classify(text, embedder)
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    words = statistics.mean(len(t.split()) for t in texts)
    print(f"\ncost per request (n={len(took)}): p50 {statistics.median(took):.1f} ms, "
          f"p95 {took[int(0.95 * len(took)) - 1]:.1f} ms, mean words {words:.0f}")


if __name__ == "__main__":
    main()
