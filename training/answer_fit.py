"""Fit the short-answer fit (``truthlens.detector.facts.short_answers.answer_fit``): which of a
context's names answers a question, learned from HaluEval QA's train fold.

Each item of the train fold (line index ``i % 10`` in 2..9; the shipped weights leave out 9,
:data:`UNSEEN`) whose right answer is one of its knowledge's names is one example: the right name
against the knowledge's other names, under a softmax (a conditional logit; names that hold one
another count as the right one). The score is the module's: a dot product of a question vector
and a name vector (12 numbers each, summed over their keys) plus linear weights. Plain numpy SGD,
two passes, seeded: a minute on two cores. Name keys seen once in the training items are dropped
(a one-off surname teaches nothing and would bloat the weights).

    python -m training.answer_fit                 # fit on lines 2..8, write the shipped weights
    python -m training.answer_fit --cv            # 4-fold cross-validation by fold pairs: ranking alone
    python -m training.answer_fit --cv --grid     # ... and the thresholds with the shipped detector

``--grid`` writes the one-name mix-ups of each held-out fold pair (``bench.mixup_rules.short_answers``,
seed 7), runs the shipped detector on them with the fit switched off, and prints, per pair of
thresholds (:data:`UNLIKELY_SHARE`, :data:`ANSWERED_SHARE`), the wrong names caught on the name and
the right names flagged when the fit's findings and vetoes are added (each fold's shares from the
model that did not see it). The evaluation fold (``i % 10 == 0``) and the dev fold (1) are never read.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import numpy as np

from training.corpus import halueval
from truthlens.detector import facts
from truthlens.detector.facts.clauses import context_clauses
from truthlens.detector.facts.names import find_names
from truthlens.detector.facts.short_answers import focus as focus_check
from truthlens.detector.facts.short_answers.answer_fit import (
    WEIGHTS,
    Features,
    Fit,
    candidate_of,
    linear_keys,
    same_name,
)

GROUPS = ("23", "45", "67", "89")  # the train fold's line indices mod 10, in cross-validation pairs
# Lines the shipped weights never see: the focus check's test sample is drawn from them
# (tests/detector/data/make_focus_sample.py), so it stays a sample the fit was not fitted on.
UNSEEN = (9,)
DIM, PASSES, RATE, L2, MIN_COUNT, SEED = 12, 2, 0.05, 1e-4, 2, 0


@dataclass
class Example:
    found: Features
    right: frozenset[str]
    line: int = 0  # the item's line in HaluEval's QA file


def examples(groups: Iterable[str], root: Path) -> dict[str, list[Example]]:
    """Per group, the train fold's items whose right answer is a name of their knowledge."""
    wanted = {int(d): g for g in groups for d in g}
    out: dict[str, list[Example]] = {g: [] for g in set(wanted.values())}
    for i, row in halueval.items("qa", ("train",), root):
        group = wanted.get(i % 10)
        if group is None:
            continue
        found = focus_check.fit_features(row["question"], context_clauses((row["knowledge"],)).focus)
        right = frozenset(w for n in find_names(row["right_answer"].strip(), frozenset(), skip_sentence_starts=False)
                          for w in n.words)
        key = candidate_of(found, right) if right else None
        if key is not None and len(found) >= 2:
            out[group].append(Example(found, key, i))
    return out


@dataclass
class Trainer:
    """The score of :class:`~truthlens.detector.facts.short_answers.answer_fit.Fit`, fitted by SGD."""

    dim: int = DIM
    q: dict[str, np.ndarray] = field(default_factory=dict)
    n: dict[str, np.ndarray] = field(default_factory=dict)
    linear: dict[str, float] = field(default_factory=dict)
    kept: frozenset[str] = frozenset()  # the name keys seen often enough

    def fit(self, items: Sequence[Example], passes: int = PASSES, rate: float = RATE) -> Trainer:
        counts = Counter(k for e in items for _, n, _ in e.found.values() for k in set(n))
        self.kept = frozenset(k for k, c in counts.items() if c >= MIN_COUNT)
        rng, init = random.Random(SEED), np.random.default_rng(SEED)
        order = list(items)
        for _ in range(passes):
            rng.shuffle(order)
            loss = sum(self._step(e, rate, init) for e in order)
            print(f"  pass: mean loss {loss / len(order):.3f}", flush=True)
        return self

    def _vector(self, table: dict[str, np.ndarray], key: str, init: np.random.Generator) -> np.ndarray:
        if key not in table:
            table[key] = (init.standard_normal(self.dim) * 0.05).astype(np.float32)
        return table[key]

    def _step(self, e: Example, rate: float, init: np.random.Generator) -> float:
        names = list(e.found)
        rows = []
        for k in names:
            q, n, position = e.found[k]
            n = tuple(x for x in n if x in self.kept)
            qv = sum((self._vector(self.q, x, init) for x in q), np.zeros(self.dim, np.float32))
            nv = sum((self._vector(self.n, x, init) for x in n), np.zeros(self.dim, np.float32))
            lin = linear_keys(q, n, position)
            rows.append((q, n, lin, qv, nv, float(qv @ nv) + sum(self.linear.get(x, 0.0) for x in lin)))
        scores = np.array([r[-1] for r in rows])
        p = np.exp(scores - scores.max())
        p /= p.sum()
        right = [j for j, k in enumerate(names) if same_name(k, e.right)]
        mass = float(p[right].sum())
        for j, (q, n, lin, qv, nv, _) in enumerate(rows):
            g = p[j] - (p[j] / mass if j in right else 0.0)  # d(-log mass)/d(score j)
            for x in q:
                self.q[x] -= rate * (g * nv + L2 * self.q[x])
            for x in n:
                self.n[x] -= rate * (g * qv + L2 * self.n[x])
            for x in lin:
                self.linear[x] = self.linear.get(x, 0.0) - rate * g
        return -math.log(mass + 1e-12)

    def as_fit(self) -> Fit:
        return Fit(self.q, {k: v for k, v in self.n.items() if k in self.kept}, self.linear)

    def save(self, path: Path) -> None:
        n = {k: v for k, v in self.n.items() if k in self.kept}
        np.savez_compressed(
            path, q_keys=np.array(sorted(self.q)), q_vectors=np.array([self.q[k] for k in sorted(self.q)], np.float16),
            n_keys=np.array(sorted(n)), n_vectors=np.array([n[k] for k in sorted(n)], np.float16),
            linear_keys=np.array(sorted(self.linear)),
            linear_weights=np.array([self.linear[k] for k in sorted(self.linear)], np.float32))


def ranked_first(model: Trainer, items: Sequence[Example]) -> float:
    hits, fit = 0, model.as_fit()
    for e in items:
        shares = fit.shares(e.found)
        hits += same_name(max(shares, key=shares.__getitem__), e.right)
    return hits / len(items)


def cross_validate(data: dict[str, list[Example]]) -> dict[str, Trainer]:
    models = {}
    for held in GROUPS:
        print(f"fold pair {held} held out", flush=True)
        models[held] = Trainer().fit([e for g in GROUPS if g != held for e in data[g]])
        print(f"  right name ranked first: {ranked_first(models[held], data[held]):.3f} of {len(data[held])}")
    return models


def grid(models: dict[str, Trainer], root: Path) -> None:
    """The thresholds, with the shipped detector (module note)."""
    from bench.mixup_rules import short_answers
    from truthlens.detector.backends.factory import create_detector
    from truthlens.detector.types import DetectionInput, DetectorSettings

    async def outcomes(cases: list) -> list[tuple[bool, bool]]:
        engine = create_detector(DetectorSettings(provider="cpu"))
        out = []
        for c in cases:
            d = await engine.detect(DetectionInput(list(c.context), c.question, c.answer), threshold=0.3)
            on = any(s.start < c.end and c.start < s.end for s in d.spans) if c.wrong else d.status == "detected"
            out.append((c.wrong, on))
        await engine.close()
        return out

    rows = []
    for held in GROUPS:
        items = [(i, r) for i, r in halueval.items("qa", ("train",), root) if str(i % 10) in held]
        cases = [c for pair in short_answers(items, random.Random(7)) for c in pair]
        with mock.patch.object(facts, "fit_reading", lambda *a: focus_check.FitReading()):  # (the check's own name)
            seen = asyncio.run(outcomes(cases))
            found = [[f for f in facts.unsupported_facts(c.answer, c.context, c.question)
                      if not c.wrong or (f.start < c.end and c.start < f.end)] for c in cases]
        with mock.patch.object(focus_check, "shipped", return_value=models[held].as_fit()):
            for c, (wrong, flagged), by_rule in zip(cases, seen, found, strict=True):
                shares = focus_check.answer_shares(c.answer, c.question, context_clauses(c.context).focus)
                mine = [s for n, s in shares if not wrong or (n.start < c.end and c.start < n.end)]
                rows.append(Outcome(wrong, flagged, bool(by_rule), mine[0] if mine else None))
    wrong = [r for r in rows if r.wrong]
    right = [r for r in rows if not r.wrong]
    print(f"{len(wrong)} pairs; without the fit: caught {_rate(wrong, 2, 0):.3f}, "
          f"right names flagged {_rate(right, 2, 0):.3f} (caught / flagged below)")
    for answered in (0.1, 0.2, 0.3, 0.5, 2.0):
        cells = [f"unlikely<{u}: {_rate(wrong, answered, u):.3f} / {_rate(right, answered, u):.3f}"
                 for u in (0.005, 0.01, 0.015, 0.02, 0.03)]
        print(f"answered>={answered}: " + " | ".join(cells))


@dataclass(frozen=True)
class Outcome:
    """One generated answer: wrong or right, flagged by the detector and by the fact check alone
    (both without the fit), and the fit's share of its name (None: not read)."""

    wrong: bool
    flagged: bool
    by_rule: bool
    share: float | None


def _rate(rows: Sequence[Outcome], answered: float, unlikely: float) -> float:
    """The share flagged with the fit: a rule's finding stands, the model's flag alone is dropped
    on an answered name (its discount), and an unlikely name is flagged."""
    def flagged(r: Outcome) -> bool:
        if r.share is None:
            return r.flagged
        return r.by_rule or (r.flagged and r.share < answered) or r.share < unlikely
    return sum(map(flagged, rows)) / len(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cv", action="store_true", help="cross-validate by fold pairs instead of writing weights")
    parser.add_argument("--grid", action="store_true", help="with --cv: the thresholds with the shipped detector")
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    args = parser.parse_args(argv)
    root = halueval.fetch(args.halueval)
    data = examples(GROUPS, root)
    print(f"{sum(map(len, data.values()))} examples: " + ", ".join(f"{g} {len(v)}" for g, v in data.items()))
    if args.cv:
        models = cross_validate(data)
        if args.grid:
            grid(models, root)
        return 0
    Trainer().fit([e for g in GROUPS for e in data[g] if e.line % 10 not in UNSEEN]).save(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
