"""How well :func:`truthlens.detector.reading.requests.what_it_asks` reads what a request asks, on the
held-out wordings (``tests/fixtures/reading/wordings_heldout.json``: written before the rule,
never changed after it) and, apart, on ``bench/wordings.py``'s development wordings (the wording
table's: QA wordings should read as questions, summary and record wordings as the whole).

Each wording is read alone, with no context (a keyword query that names nothing reads as the
whole then; over a context that holds its words it reads as a question). Prints accuracy per
class, the confusion and each miss; then, over RAGTruth's dev part, the task each development
wording is read as (what ``x-truthlens-task`` says).

    python -m bench.request_reading
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bench.wordings import BY_SHAPE
from training.corpus import ragtruth
from truthlens.detector.prompt import read_task
from truthlens.detector.reading.requests import what_it_asks

HELDOUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "reading" / "wordings_heldout.json"
SAMPLE_QUESTION = "when will the tram line open"  # fills bench/wordings.py's {question}


def heldout() -> list[tuple[str, str]]:
    return [(c["text"], c["asks"]) for c in json.loads(HELDOUT.read_text())["cases"]]


def development() -> list[tuple[str, str]]:
    expected = {"qa": "question", "summary": "whole", "record": "whole"}
    return [(w.user.replace("{question}", SAMPLE_QUESTION).replace("{document}", ""), expected[shape])
            for shape, wordings in BY_SHAPE.items() for w in wordings]


def report(name: str, cases: list[tuple[str, str]]) -> float:
    read = [(text, want, what_it_asks(text)) for text, want in cases]
    right = sum(want == got for _, want, got in read)
    print(f"\n{name}: {right} of {len(read)} read as written ({100 * right / len(read):.1f}%)")
    for label in sorted({w for _, w, _ in read}):
        rows = [(w, g) for _, w, g in read if w == label]
        counts = Counter(g for _, g in rows)
        print(f"  {label:<13} {sum(w == g for w, g in rows)} of {len(rows)}   read as: {dict(counts)}")
    for text, want, got in read:
        if want != got:
            print(f"    miss: {text!r}: {want} read as {got}")
    return right / len(read)


def read_over_dev() -> None:
    """Each of bench/wordings.py's wordings over the RAGTruth dev part's items of its shape: the
    task the gateway reads it as (x-truthlens-task), share of items. No model runs."""
    if not ragtruth.available():
        print("\n(RAGTruth is not placed: the reading over its dev part is left out)")
        return
    print("\nbench/wordings.py over RAGTruth's dev part (odd source_id): how each wording is read")
    tasks: tuple[tuple[str, ragtruth.Task], ...] = (("qa", "qa"), ("summary", "summary"), ("record", "data2txt"))
    for shape, task in tasks:
        items = list(ragtruth.responses(task, ("dev",)))
        for w in BY_SHAPE[shape]:
            names = Counter(read_task(r.context, w.question(r.question, r.context)).name for r in items)
            shares = ", ".join(f"{n} {100 * c / len(items):.0f}%" for n, c in names.most_common())
            print(f"  {shape:<8} {w.name:<45} {shares}")


def main() -> int:
    report("held-out wordings", heldout())
    report("development wordings (bench/wordings.py)", development())
    read_over_dev()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
