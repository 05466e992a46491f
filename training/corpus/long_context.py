"""The long-context pair: one fact passage among ~20k tokens of real news, a faithful answer
and the same answer with a wrong year at its very end.

A detector that right-truncates never sees the end of the answer (false "clean"); one that
flags a token whenever *any* chunk fails to support it flags the faithful answer too. The
pair separates both failures. Filler is HaluEval summarization documents of the given fold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from training.corpus import halueval

EVIDENCE = (
    "Brightvale Instruments has its headquarters in Tartu. Brightvale Instruments opened for business in 1932. "
    "About 4,120 people work for Brightvale Instruments. The annual report of Brightvale Instruments shows "
    "sales of €812.5 million."
)
QUESTION = "Tell me about Brightvale Instruments."
FAITHFUL = (
    "As stated in the passages, Brightvale Instruments has its headquarters in Tartu. About 4,120 people "
    "work for Brightvale Instruments. Brightvale Instruments opened for business in 1932."
)
WRONG = FAITHFUL.replace("1932", "1987")
WRONG_YEAR = "1987"


@dataclass(frozen=True, slots=True)
class LongContextPair:
    context: tuple[str, ...]
    question: str
    faithful: str
    wrong: str


def build(root: Path = halueval.DEFAULT_DIR, *, documents: int = 28, fold: halueval.Fold = "dev") -> LongContextPair:
    """``documents`` news articles (~700 tokens each) with the fact passage in the middle."""
    filler = [row["document"] for _, row in halueval.items("summarization", (fold,), root)][:documents]
    filler.insert(len(filler) // 2, EVIDENCE)
    return LongContextPair(tuple(filler), QUESTION, FAITHFUL, WRONG)
