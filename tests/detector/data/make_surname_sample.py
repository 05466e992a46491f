"""Writes ``mixups_surnames.json``, the generated cases of ``tests/detector/test_moved_surnames.py``.

The mix-up generator (:mod:`bench.mixup_rules`, "name moved between clauses") over the tuning
half's contexts (the dev parts, as ``bench.mixups --split tuning``) with seeds 4 to 9 (the
bench's tuning sample is seed 1, its held-out sample seed 2, the names test seed 3), kept where
the moved name is a surname, bare or after a title of address ("Mr Scott"), and its clause
names the full person too ("... Walter Scott was shot in North Charleston, Mr Scott."): the
class of name moves the clause check missed because the surname is in the context clause,
inside the full name. Written before the rule that reads that class, not picked.

    python tests/detector/data/make_surname_sample.py tests/detector/data/mixups_surnames.json
"""

from __future__ import annotations

import random
import re
import sys
import zlib
from pathlib import Path

from bench.mixup_rules import Case
from bench.mixups import SPLITS, sample, sources, write
from training.corpus import halueval
from truthlens.detector.text import clauses

TITLES = {"Mr", "Mrs", "Ms", "Miss", "Dr", "Prof", "Sir", "Lady", "Lord"}
SEEDS = range(4, 10)


def _surname_beside_full_name(c: Case) -> bool:
    moved = c.answer[c.start:c.end].split()
    if len(moved) > 2 or (len(moved) == 2 and moved[0].rstrip(".") not in TITLES):
        return False
    for a, b in clauses(c.answer):
        if a <= c.start < b:
            rest = c.answer[a:c.start] + c.answer[c.end:b]
            return re.search(rf"\b[A-Z][\w'-]+ {re.escape(moved[-1])}\b", rest) is not None
    return False


def main(out: Path) -> None:
    half, _ = SPLITS["tuning"]
    root = halueval.fetch(halueval.DEFAULT_DIR)
    srcs = sources(half)
    kept: list[Case] = []
    seen: set[str] = set()
    for seed in SEEDS:
        rows = ((i, r) for i, r in halueval.items("qa", ("dev",), root)
                if zlib.crc32(f"halueval-qa-{i}".encode()) % 2 == half)
        for c in sample(srcs, rows, 2000, random.Random(seed)):
            if c.kind == "name moved between clauses" and c.answer not in seen and _surname_beside_full_name(c):
                kept.append(c)
                seen.add(c.answer)
    write(kept, out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
