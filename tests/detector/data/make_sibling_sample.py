"""Writes ``sibling_sample.json``, the generated cases of ``tests/detector/test_sibling_sample.py``.

The mix-up generator (:mod:`bench.mixup_rules`, through :func:`bench.mixups.sample`) over contexts
of the **train** parts, which the sibling rules of :mod:`truthlens.detector.facts.clauses` were
not built on (they were built on the bench's tuning half, the dev parts): RAGTruth's train part
and HaluEval's train fold, kept where a hash of the context's key is 7 modulo 10 (a tenth, so the
draw stays small); seed 11. Kept: the two name kinds ("attribute to a sibling", "name moved between
clauses") and the faithful rewordings that keep every name (:data:`KINDS`). Written after the rule and
before anyone looked at its cases, not picked.

    python tests/detector/data/make_sibling_sample.py tests/detector/data/sibling_sample.json
"""

from __future__ import annotations

import random
import sys
import zlib
from pathlib import Path

from bench.mixups import sample, sources, write
from training.corpus import halueval

SEED = 11
# Cases kept of each kind: the two name kinds, and the faithful rewordings that keep every name.
KINDS = {"attribute to a sibling": 40, "name moved between clauses": 30, "restated": 20, "passive voice": 20,
         "list inlined": 20}


def main(out: Path) -> None:
    srcs = [s for s in sources(None, folds=("train",)) if zlib.crc32(s.key.encode()) % 10 == 7]
    root = halueval.fetch(halueval.DEFAULT_DIR)
    rows = [(i, r) for i, r in halueval.items("qa", ("train",), root) if i % 10 == 7][:1]
    cases = [c for c in sample(srcs, rows, max(KINDS.values()), random.Random(SEED)) if c.kind in KINDS]
    kept = [c for kind, n in KINDS.items() for c in [c for c in cases if c.kind == kind][:n]]
    write(kept, out)
    print(f"{len(kept)} cases from {len(srcs)} contexts written to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[-1]))
