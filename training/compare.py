"""Whether one model's verdict beats another's on the dev parts by more than chance.

``python -m training.verdict --save-oof FILE`` stores each dev answer's out-of-fold verdict score
(its set, its label, the score's log-odds with 0 at the operating point). Two such files over the
same answers are compared here: the difference in AUROC, in balanced accuracy and in faithful
answers flagged at the operating point (B − A) per set and pooled, each with a 95% interval from
a paired bootstrap that resamples answers within each set (both models see the same resample).

RAGTruth's dev part is 215 answers, and a model picked on it can lose what it gained there on
text it never saw: run 9's pooled AUROC gain over run 6 (+0.023) is inside its interval
(training/README.md). A choice between models should rest on an interval clear of zero.

    python -m training.verdict --model A --human-dev training/output/llm5 --save-oof a.npz
    python -m training.verdict --model B --human-dev training/output/llm5 --save-oof b.npz
    python -m training.compare a.npz b.npz
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.evaluate import auroc

RESAMPLES = 2000
SEED = 7


@dataclass(frozen=True, slots=True)
class OutOfFold:
    """One model's out-of-fold verdict scores on the dev answers."""

    sets: np.ndarray  # the dev set of each answer
    hallucinated: np.ndarray  # bool
    log_odds: np.ndarray  # 0 = the operating point
    answers: np.ndarray  # a digest of each answer's text, to check both files hold the same answers

    def save(self, path: Path) -> None:
        np.savez(path, sets=self.sets, hallucinated=self.hallucinated, log_odds=self.log_odds, answers=self.answers)

    @classmethod
    def from_peaks(
        cls, sets: Sequence[str], hallucinated: Sequence[bool], peaks: np.ndarray, answers: Sequence[str]
    ) -> OutOfFold:
        """A checkpoint's token peaks (each answer's highest P(hallucinated)) as scores, 0.5 at the
        operating point: how a checkpoint compares before any verdict is fitted on it."""
        clipped = np.clip(peaks, 1e-6, 1 - 1e-6)
        log_odds = np.log(clipped / (1 - clipped))
        return cls(np.array(sets), np.array(hallucinated, dtype=bool), log_odds, np.array(answers))

    @classmethod
    def load(cls, path: Path) -> OutOfFold:
        with np.load(path) as f:
            return cls(f["sets"], f["hallucinated"], f["log_odds"], f["answers"])


def metrics(truth: np.ndarray, log_odds: np.ndarray) -> np.ndarray:
    """AUROC, balanced accuracy and faithful answers flagged at the operating point (NaN where
    the answers lack a class)."""
    flagged = log_odds >= 0.0
    recall = float(flagged[truth].mean()) if truth.any() else math.nan
    false_alarms = float(flagged[~truth].mean()) if (~truth).any() else math.nan
    ranking = auroc(log_odds, truth) if truth.any() and (~truth).any() else math.nan
    return np.array([ranking, (recall + 1 - false_alarms) / 2, false_alarms])


def groups(sets: np.ndarray) -> dict[str, np.ndarray]:
    """Each set, and each family's sets pooled, as index arrays."""
    out = {str(name): np.flatnonzero(sets == name) for name in dict.fromkeys(sets.tolist())}
    for family in ("ragtruth", "halueval"):
        members = np.flatnonzero(np.char.startswith(sets.astype(str), family))
        if len(members):
            out[f"{family} pooled"] = members
    return out


METRICS = ("AUROC", "balanced accuracy", "faithful flagged")


@dataclass(frozen=True, slots=True)
class Difference:
    """B − A on one group of answers: per metric (:data:`METRICS`) the difference and its 95%
    interval, NaN where the metric is undefined."""

    name: str
    n: int
    delta: np.ndarray
    low: np.ndarray
    high: np.ndarray


def compare(a: OutOfFold, b: OutOfFold, resamples: int = RESAMPLES, seed: int = SEED) -> list[Difference]:
    if not (np.array_equal(a.answers, b.answers) and np.array_equal(a.sets, b.sets)
            and np.array_equal(a.hallucinated, b.hallucinated)):
        raise ValueError("the two files score different answers: save both with the same data options")
    rng = np.random.default_rng(seed)
    out = []
    for name, members in groups(a.sets).items():
        strata = [members[a.sets[members] == s] for s in dict.fromkeys(a.sets[members].tolist())]
        draws = np.empty((resamples, len(METRICS)))
        for k in range(resamples):
            idx = np.concatenate([rng.choice(s, size=len(s), replace=True) for s in strata])
            y = a.hallucinated[idx]
            draws[k] = metrics(y, b.log_odds[idx]) - metrics(y, a.log_odds[idx])
        y = a.hallucinated[members]
        delta = metrics(y, b.log_odds[members]) - metrics(y, a.log_odds[members])
        with warnings.catch_warnings():  # all-NaN columns: the metric is undefined for this group
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanpercentile(draws, [2.5, 97.5], axis=0)
        out.append(Difference(name, len(members), delta, low, high))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.compare", description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="--save-oof file of the model compared against")
    parser.add_argument("b", type=Path, help="--save-oof file of the candidate")
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    args = parser.parse_args(argv)
    rows = compare(OutOfFold.load(args.a), OutOfFold.load(args.b), args.resamples)
    print(f"B = {args.b}, A = {args.a}: B − A on the dev parts (out-of-fold), 95% paired bootstrap interval")
    print(f"{'set':<34} {'n':>5}" + "".join(f"  {m:>24}" for m in METRICS))
    for r in rows:
        cells = ["-" if math.isnan(d) else f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                 for d, lo, hi in zip(r.delta, r.low, r.high, strict=True)]
        print(f"{r.name:<34} {r.n:>5}" + "".join(f"  {c:>24}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
