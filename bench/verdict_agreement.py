"""How far a refactor moves the detector's verdicts: the same development answers checked by two
builds (``truthlens detect``), compared answer by answer.

``--write-inputs FILE`` writes the answers as ``truthlens detect`` reads them: the first
``--per-task`` responses of each RAGTruth task whose ``source_id`` is odd (the development half)
and the first ``--halueval-items`` items of each HaluEval task's development fold (line
i % 10 == 1), each as its right and its hallucinated answer. Each build then checks them::

    python -m bench.verdict_agreement --write-inputs answers.jsonl
    truthlens detect --input answers.jsonl > before.jsonl      # (the other build's checkout)
    truthlens detect --input answers.jsonl > after.jsonl
    python -m bench.verdict_agreement answers.jsonl before.jsonl after.jsonl

The comparison prints, per set and pooled: the share of answers with the same verdict, the
answers whose verdict changed (and which way), and the mean absolute change of the score.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from itertools import islice
from pathlib import Path
from typing import Any

from training.corpus import halueval, ragtruth


def write_inputs(path: Path, per_task: int, halueval_items: int) -> int:
    rows: list[dict[str, Any]] = []
    for task in ragtruth.TASKS:
        for r in islice(ragtruth.responses(task, ("dev", "train")), per_task):  # odd source_id
            rows.append({"set": f"ragtruth-{task}", "context": list(r.context), "question": r.question,
                         "answer": r.answer, "label": r.hallucinated})
    for htask in halueval.TASKS:
        for ctx, q, a, h in islice(halueval.eval_pairs(htask, ("dev",)), 2 * halueval_items):
            rows.append({"set": f"halueval-{htask}", "context": list(ctx), "question": q, "answer": a, "label": h})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def compare(inputs: Path, before: Path, after: Path) -> None:
    sets = [json.loads(line)["set"] for line in inputs.open(encoding="utf-8")]
    old = [json.loads(line) for line in before.open(encoding="utf-8")]
    new = [json.loads(line) for line in after.open(encoding="utf-8")]
    if not len(sets) == len(old) == len(new):
        raise SystemExit(f"{len(sets)} answers, {len(old)} and {len(new)} results: not the same run")
    groups: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(sets):
        groups[name].append(i)
    groups["pooled"] = list(range(len(sets)))
    print(f"{'set':<24}{'answers':>8}{'same':>8}{'agree':>8}{'+flag':>7}{'-flag':>7}{'|d score|':>10}")
    for name, index in groups.items():
        same = sum(old[i].get("detected") == new[i].get("detected") for i in index)
        flagged = sum(bool(new[i].get("detected")) and not old[i].get("detected") for i in index)
        cleared = sum(bool(old[i].get("detected")) and not new[i].get("detected") for i in index)
        moved = [abs(float(new[i]["score"]) - float(old[i]["score"])) for i in index
                 if "score" in old[i] and "score" in new[i]]
        print(f"{name:<24}{len(index):>8}{same:>8}{same / len(index):>8.3f}{flagged:>7}{cleared:>7}"
              f"{sum(moved) / max(len(moved), 1):>10.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="answers.jsonl before.jsonl after.jsonl")
    parser.add_argument("--write-inputs", type=Path, default=None, help="write the development answers here")
    parser.add_argument("--per-task", type=int, default=100, help="RAGTruth responses per task")
    parser.add_argument("--halueval-items", type=int, default=30, help="HaluEval items per task (two answers each)")
    args = parser.parse_args(argv)
    if args.write_inputs is not None:
        print(f"{write_inputs(args.write_inputs, args.per_task, args.halueval_items)} answers")
        return 0
    if len(args.files) != 3:
        parser.error("give answers.jsonl before.jsonl after.jsonl, or --write-inputs FILE")
    compare(*args.files)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
