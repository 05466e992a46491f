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

``--over-window`` keeps only the RAGTruth answers whose context does not fit beside them in one
model row (the ones a change of the row plan can move; the others keep their one row), and
``--skip-bench N`` leaves out the first ``N`` inputs of ``bench.detector_vs_lettucedetect``'s
RAGTruth QA set, so the two measure different answers.

The comparison prints, per set and pooled: the share of answers with the same verdict, the
answers whose verdict changed (and which way), the mean absolute change of the score, and each
build's balanced accuracy and AUROC against the human labels.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from training.corpus import halueval, ragtruth
from truthlens.detector.chunking import row_layout, whole_prompt
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.manifest import load_manifest, resolve_model_dir
from truthlens.detector.prompt import checked
from truthlens.detector.types import DetectionInput

BENCH_INPUTS = Path("training/output/ragtruth/ragtruth_qa.jsonl")


def write_inputs(path: Path, per_task: int, halueval_items: int, *, over_window: bool = False,
                 skip_bench: int = 0) -> int:
    rows: list[dict[str, Any]] = []
    skipped: set[tuple[tuple[str, ...], str]] = set()
    if skip_bench:
        from bench.detector_vs_lettucedetect import load_inputs

        skipped = {(tuple(i.context), i.answer) for i in load_inputs(BENCH_INPUTS, skip_bench)}
    over = _over_window() if over_window else None
    for task in ragtruth.TASKS:
        answers = (r for r in ragtruth.responses(task, ("dev", "train"))  # odd source_id
                   if (tuple(r.context), r.answer) not in skipped
                   and (over is None or over(DetectionInput(tuple(r.context), r.question, r.answer))))
        for r in islice(answers, per_task):
            rows.append({"set": f"ragtruth-{task}", "context": list(r.context), "question": r.question,
                         "answer": r.answer, "label": r.hallucinated})
    for htask in halueval.TASKS:
        for ctx, q, a, h in islice(halueval.eval_pairs(htask, ("dev",)), 2 * halueval_items):
            rows.append({"set": f"halueval-{htask}", "context": list(ctx), "question": q, "answer": a, "label": h})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def _over_window() -> Any:
    """Whether an answer's context does not fit beside it in one row of the shipped model."""
    manifest = load_manifest(resolve_model_dir(None))
    encoder = TextEncoder(manifest.tokenizer_path)

    def over(item: DetectionInput) -> bool:
        item = checked(item)
        layout = row_layout(encoder, list(item.context), item.question, len(encoder.encode(item.answer)),
                            max_length=manifest.max_length, answer_overlap_tokens=32)
        return whole_prompt(encoder, list(item.context), layout.question, layout.prompt_budget) is None

    return over


def balanced_accuracy(detected: list[bool], labels: list[bool]) -> float:
    positives = sum(labels)
    hits = sum(d and y for d, y in zip(detected, labels, strict=True))
    passes = sum(not d and not y for d, y in zip(detected, labels, strict=True))
    return 0.5 * (hits / max(positives, 1) + passes / max(len(labels) - positives, 1))


def auroc(scores: list[float], labels: list[bool]) -> float:
    """The chance a hallucinated answer scores above a faithful one (ties count half)."""
    pos = np.array([s for s, y in zip(scores, labels, strict=True) if y])
    neg = np.array([s for s, y in zip(scores, labels, strict=True) if not y])
    if not len(pos) or not len(neg):
        return float("nan")
    return float(((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum())
                 / (len(pos) * len(neg)))


def compare(inputs: Path, before: Path, after: Path) -> None:
    answers = [json.loads(line) for line in inputs.open(encoding="utf-8")]
    sets = [a["set"] for a in answers]
    labels = [bool(a["label"]) for a in answers]
    old = [json.loads(line) for line in before.open(encoding="utf-8")]
    new = [json.loads(line) for line in after.open(encoding="utf-8")]
    if not len(sets) == len(old) == len(new):
        raise SystemExit(f"{len(sets)} answers, {len(old)} and {len(new)} results: not the same run")
    groups: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(sets):
        groups[name].append(i)
    groups["pooled"] = list(range(len(sets)))
    print(f"{'set':<24}{'answers':>8}{'same':>8}{'agree':>8}{'+flag':>7}{'-flag':>7}{'|d score|':>10}"
          f"{'bal. acc. before/after':>24}{'AUROC before/after':>20}")
    for name, index in groups.items():
        same = sum(old[i].get("detected") == new[i].get("detected") for i in index)
        flagged = sum(bool(new[i].get("detected")) and not old[i].get("detected") for i in index)
        cleared = sum(bool(old[i].get("detected")) and not new[i].get("detected") for i in index)
        moved = [abs(float(new[i]["score"]) - float(old[i]["score"])) for i in index
                 if "score" in old[i] and "score" in new[i]]
        truth = [labels[i] for i in index]
        quality = [(balanced_accuracy([bool(run[i].get("detected")) for i in index], truth),
                    auroc([float(run[i].get("score", 0.0)) for i in index], truth)) for run in (old, new)]
        print(f"{name:<24}{len(index):>8}{same:>8}{same / len(index):>8.3f}{flagged:>7}{cleared:>7}"
              f"{sum(moved) / max(len(moved), 1):>10.4f}"
              f"{f'{quality[0][0]:.3f}/{quality[1][0]:.3f}':>24}{f'{quality[0][1]:.3f}/{quality[1][1]:.3f}':>20}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="answers.jsonl before.jsonl after.jsonl")
    parser.add_argument("--write-inputs", type=Path, default=None, help="write the development answers here")
    parser.add_argument("--per-task", type=int, default=100, help="RAGTruth responses per task")
    parser.add_argument("--halueval-items", type=int, default=30, help="HaluEval items per task (two answers each)")
    parser.add_argument("--over-window", action="store_true",
                        help="only RAGTruth answers whose context does not fit beside them in one row")
    parser.add_argument("--skip-bench", type=int, default=0, metavar="N",
                        help="leave out the first N inputs of bench.detector_vs_lettucedetect's RAGTruth QA set")
    args = parser.parse_args(argv)
    if args.write_inputs is not None:
        written = write_inputs(args.write_inputs, args.per_task, args.halueval_items,
                               over_window=args.over_window, skip_bench=args.skip_bench)
        print(f"{written} answers")
        return 0
    if len(args.files) != 3:
        parser.error("give answers.jsonl before.jsonl after.jsonl, or --write-inputs FILE")
    compare(*args.files)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
