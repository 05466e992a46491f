"""What explaining flagged spans costs (``src/truthlens/detector/explain.py``) beside the fact check every check runs.

A flagged answer (a wrong year and a made-up name, two spans) against contexts of growing size:
the Eiffel passage the claims are about, placed in the middle of filler passages about other
things (so the regular expression of the claim's words has real text to scan, and the passages
it hits are cut into sentences). Per size, side by side: the fact check (``check_facts``, no
cache: the first check of a context), ``explain`` for the two spans, and their ratio. The
model's own run is not included: it costs more than either at every size.

    python -m bench.span_explain [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from truthlens.detector import facts
from truthlens.detector.explain import explain
from truthlens.detector.types import Span

EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the engineering "
    "company of Gustave Eiffel and completed in 1889 as the entrance arch to the World's Fair."
)
ANSWER = "The Eiffel Tower was completed in 1925 and designed by Albert Speer."
# Filler about other buildings: shares some of the claim's words ("tower", "designed", "completed").
FILLER = (
    "The harbour crane was designed by a local firm and completed after two winters. "
    "Its tower holds a clock that was repaired in {year}, and the quay beside it is 240 metres long. "
)
SIZES = (2_000, 100_000, 1_000_000, 2_000_000)  # context characters (2 MB: the default max_context_chars)


def context_of(chars: int) -> tuple[list[str], int]:
    """Filler passages of about ``chars`` characters with the Eiffel passage in the middle, and its index."""
    passages: list[str] = []
    total = 0
    i = 0
    while total < chars:
        passage = FILLER.format(year=1700 + i % 100)
        passages.append(passage)
        total += len(passage)
        i += 1
    middle = len(passages) // 2
    passages.insert(middle, EIFFEL)
    return passages, middle


def best_ms(run: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (the best is reported)")
    args = parser.parse_args()
    print(f"{'context chars':>14} {'passages':>9} {'fact check ms':>14} {'explain ms':>11} {'explain/facts':>14}")
    for size in SIZES:
        context, eiffel = context_of(size)
        findings = facts.check_facts(ANSWER, context).findings
        spans = [Span(f.start, f.end, f.text, 0.99, f.reason) for f in findings]
        assert len(spans) == 2, findings
        explained = explain(spans, findings, ANSWER, context)
        assert all(s.passage == eiffel for s in explained), explained
        facts_ms = best_ms(lambda c=context: first_check(c), args.repeats)  # type: ignore[misc]
        explain_ms = best_ms(lambda s=spans, f=findings, c=context: explain(s, f, ANSWER, c), args.repeats)  # type: ignore[misc]
        print(f"{sum(map(len, context)):>14,} {len(context):>9,} {facts_ms:>14.2f} {explain_ms:>11.2f} "
              f"{explain_ms / facts_ms:>13.2f}x")


def first_check(context: list[str]) -> object:
    """The fact check of a context it has not seen: it caches small contexts (a refine loop
    re-checks the same one), explain caches nothing."""
    facts._index.cache_clear()
    facts._sentences.cache_clear()
    return facts.check_facts(ANSWER, context)


if __name__ == "__main__":
    main()
