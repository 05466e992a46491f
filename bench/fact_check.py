"""The detector's fact check alone (``src/truthlens/detector/facts/``, no model): HaluEval dev, RAGTruth odd half.

How often it flags each kind of text, on the **dev** fold (line index i % 10 == 1; the
evaluation fold is never looked at here, the rules were tuned on this one):

- QA: the hallucinated answer, the right answer as HaluEval gives it (a short phrase), the
  right answer as a sentence ("The answer is X."), and the *faithful twin* (the hallucinated
  sentence with the right answer in place of its one novel span, built by
  :func:`training.corpus.halueval.faithful_twin`, independently of the check);
- summarization and dialogue: the hallucinated and the reference text (CNN/DailyMail
  highlights and dialogue replies often state names and numbers their source does not, so
  there "right flagged" is not all false alarms).

And on **RAGTruth's odd half** (``source_id`` odd: the training and dev parts, open to error
study; the even half is evaluation-only and never read here), when its files are present: per
task, the share of faithful and of hallucinated LLM answers with at least one finding, and of
the hallucinated answers' findings how many fall inside a human-labelled span.

    python -m bench.fact_check [--items 1000] [--ragtruth training/output/ragtruth]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from training.corpus import halueval, ragtruth
from truthlens.detector.facts import unsupported_facts


def _rate(flags: list[bool]) -> str:
    return f"{sum(flags) / len(flags):6.1%} ({sum(flags)}/{len(flags)})" if flags else "   n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000, help="items per task (dev fold, file order)")
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR, help="RAGTruth (training/README.md)")
    args = parser.parse_args()
    root = halueval.fetch()
    rows: list[tuple[str, str, str]] = []
    reasons: Counter[str] = Counter()
    checks, started = 0, time.perf_counter()
    for task in halueval.TASKS:
        flags: dict[str, list[bool]] = {"hallucinated": [], "right": [], "right as a sentence": [],
                                        "faithful twin": []}
        pairs = halueval.eval_pairs(task, ("dev",), root)  # each item's right answer, then its wrong one
        for n, ((context, question, right, _), (_, _, wrong, _)) in enumerate(zip(pairs, pairs, strict=False)):
            if n >= args.items:
                break
            texts = {"hallucinated": wrong, "right": right}
            if task == "qa":
                texts["right as a sentence"] = f"The answer is {right}."
                twin = halueval.faithful_twin(wrong, right, (*context, question))
                if twin is not None:
                    texts["faithful twin"] = twin
            for kind, text in texts.items():
                findings = unsupported_facts(text, context, question)
                checks += 1
                flags[kind].append(bool(findings))
                if kind == "hallucinated":
                    reasons.update(f.reason for f in findings)
        for kind, values in flags.items():
            if values:
                rows.append((task, kind, _rate(values)))
    elapsed = time.perf_counter() - started
    print(f"{'task':<14} {'text':<22} flagged by the fact check alone")
    for task, kind, rate in rows:
        print(f"{task:<14} {kind:<22} {rate}")
    print(f"reasons in hallucinated texts: {dict(reasons)}")
    print(f"{checks} checks, {1000 * elapsed / max(checks, 1):.2f} ms each")
    if ragtruth.available(args.ragtruth):
        print_ragtruth(args.ragtruth)
    else:
        print(f"RAGTruth not in {args.ragtruth}: its rows are skipped (python -m training.corpus.ragtruth)")


def print_ragtruth(root: Path) -> None:
    print("\nRAGTruth odd half (train and dev parts): answers with at least one finding")
    print(f"{'task':<10} {'faithful':>18} {'hallucinated':>18}  findings inside a labelled span")
    for task in ragtruth.TASKS:
        flags: dict[bool, list[bool]] = {False: [], True: []}
        inside = total = 0
        for r in ragtruth.responses(task, ("train", "dev"), root):
            findings = unsupported_facts(r.answer, r.context, r.question)
            flags[r.hallucinated].append(bool(findings))
            if r.hallucinated:
                total += len(findings)
                inside += sum(any(a < f.end and f.start < b for a, b in r.spans) for f in findings)
        print(f"{task:<10} {_rate(flags[False]):>18} {_rate(flags[True]):>18}  {inside}/{total}")


if __name__ == "__main__":
    main()
