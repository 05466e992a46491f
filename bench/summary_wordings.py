"""HaluEval's evaluation-fold summaries asked with other wordings, this build beside older ones.

The detector quality table (:mod:`bench.detector_quality`) asks HaluEval's summaries with the
data set's own instructions, the wordings an older build's model and verdict read best. An
application asks with its own words. This bench asks the same answers (the evaluation fold, line
index i % 10 == 0: report only) with a few of :mod:`bench.wordings`' summary wordings, and prints
accuracy (the set is balanced), AUROC and faithful answers flagged per wording, for this build's
shipped defaults and, with ``--beside COMMIT``, an older build's (its own code and model, this
bench and ``bench/wordings.py`` copied in: :mod:`bench.other_build`).

    python -m bench.summary_wordings [--items 150] [--beside COMMIT ...]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path

from bench import other_build, wordings
from training.corpus import halueval
from training.scoring import Case, Decision, halueval_cases, metrics, score_cases
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import DetectorSettings

OWN = "as in the data (HaluEval's own)"
NAMES = ("recipe (trained)", "none", "TL;DR", "polite", "length limit (RAGTruth's form)", "key points")


def worded(cases: list[Case], wording: wordings.Wording | None) -> list[Case]:
    if wording is None:
        return cases
    return [Case(dataclasses.replace(c.item, question=wording.question(c.item.question, c.item.context)),
                 c.hallucinated) for c in cases]


async def table(root: Path, items: int) -> list[str]:
    """One line per wording: name, accuracy, AUROC, faithful flagged (tab-separated)."""
    by_name = {w.name: w for w in wordings.SUMMARY}
    engine = create_detector(DetectorSettings(provider="cpu"))
    base = halueval_cases("summarization", ("eval",), root, items)
    decision = Decision(engine.rules, 0.5, engine.verdict)
    lines = []
    try:
        for name in (OWN, *NAMES):
            m = metrics(await score_cases(engine, worded(base, by_name.get(name))), decision)
            lines.append(f"{name}\t{m.accuracy:.3f}\t{m.auroc:.3f}\t{m.false_alarms:.3f}")
    finally:
        await engine.close()
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.summary_wordings", description=__doc__.splitlines()[0])
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--items", type=int, default=150, help="HaluEval summarization items (x2 answers)")
    parser.add_argument("--beside", nargs="*", default=[], metavar="COMMIT")
    parser.add_argument("--lines", action="store_true", help=argparse.SUPPRESS)  # (what a child build prints)
    args = parser.parse_args(argv)
    root = halueval.fetch(args.halueval)
    if args.lines:
        print("\n".join(asyncio.run(table(root, args.items))))
        return 0
    builds = {"this build": asyncio.run(table(root, args.items))}
    for commit in args.beside:
        out = other_build.output_at(commit, ("src", "training"), "bench.summary_wordings",
                                    ["--lines", "--halueval", str(root.resolve()), "--items", str(args.items)],
                                    this_tree=(Path("bench/summary_wordings.py"), Path("bench/wordings.py"),
                                               Path("bench/other_build.py")))
        builds[commit] = [line for line in out.splitlines() if line.count("\t") == 3]
    print(f"HaluEval summarization, evaluation fold (i % 10 == 0), {2 * args.items} answers (balanced), "
          "shipped defaults, route threshold 0.5: accuracy / AUROC / faithful flagged")
    width = max(len(n) for n in (OWN, *NAMES))
    print(f"{'wording':<{width}}  " + "  ".join(f"{b:>24}" for b in builds))
    rows = {b: [line.split("\t") for line in lines] for b, lines in builds.items()}
    for i, name in enumerate((OWN, *NAMES)):
        cells = ["{} / {} / {}".format(*rows[b][i][1:]) if i < len(rows[b]) else "-" for b in builds]
        print(f"{name:<{width}}  " + "  ".join(f"{c:>24}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
