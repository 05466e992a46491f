"""Hand-written grounded answers (not from the generator) that the shipped model must get right.

Each case names the answer text that is hallucinated (or none). Prints, per case, the text
the model flags and whether that matches: a flagged token must overlap the expected span,
and a supported answer must have no token over the threshold.

    python -m training.handchecks --model src/truthlens/detector/default_model
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.corpus.builder import Example, LabelSpan
from training.encode import encode
from training.evaluate import OnnxTagger


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    context: tuple[str, ...]
    question: str
    answer: str
    hallucinated: str | None  # substring of the answer, or None for a supported answer


CASES: tuple[Case, ...] = (
    Case(
        "wrong number",
        (
            "The Eiffel Tower is a wrought-iron lattice tower in Paris. "
            "It is 330 metres tall and was completed in 1889.",
        ),
        "How tall is the Eiffel Tower?",
        "The Eiffel Tower is 450 metres tall.",
        "450 metres",
    ),
    Case(
        "right paraphrase",
        (
            "In fiscal 2023 the company reported revenue of $4.2 million, up 12% from the prior year.",
            "The company is based in Oslo.",
        ),
        "How did the company's revenue develop in 2023?",
        "Revenue grew by 12 percent in fiscal 2023, reaching 4.2 million US dollars.",
        None,
    ),
    Case(
        "wrong date at the end of a long answer",
        (
            "Marie Curie was born in Warsaw on 7 November 1867. She moved to Paris in 1891 to study physics and "
            "mathematics at the Sorbonne.",
            "Curie shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri Becquerel. In 1911 she received "
            "the Nobel Prize in Chemistry for the discovery of polonium and radium.",
            "She died on 4 July 1934 at a sanatorium in Passy, France.",
        ),
        "Summarize the life of Marie Curie.",
        "Marie Curie was born in Warsaw on 7 November 1867. In 1891 she moved to Paris, where she studied physics "
        "and mathematics at the Sorbonne. She shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri "
        "Becquerel, and in 1911 she won the Nobel Prize in Chemistry for discovering polonium and radium. "
        "She died at a sanatorium in Passy, France, on 4 July 1941.",
        "4 July 1941",
    ),
    Case(
        "negation",
        (
            "Take ibuprofen with food or milk to reduce stomach upset. "
            "Adults may take 200 to 400 mg every 4 to 6 hours.",
        ),
        "Should ibuprofen be taken with food?",
        "No, ibuprofen should be taken on an empty stomach.",
        "should be taken on an empty stomach",
    ),
    Case(
        "unsupported addition",
        ("The Model T was produced by Ford Motor Company from 1908 to 1927.",),
        "When was the Model T produced?",
        "The Model T was produced from 1908 to 1927. It was the first car to have air conditioning as standard.",
        "It was the first car to have air conditioning as standard.",
    ),
    Case(
        "supported multi-fact answer",
        (
            "Mount Kilimanjaro is a dormant volcano in Tanzania. "
            "Its highest peak, Uhuru, rises to 5,895 metres above sea level.",
            "The first recorded ascent was made in 1889 by Hans Meyer and Ludwig Purtscheller.",
        ),
        "Tell me about Mount Kilimanjaro.",
        "Mount Kilimanjaro is a dormant volcano located in Tanzania. "
        "Its highest peak, Uhuru, is 5895 metres above sea level, "
        "and it was first climbed in 1889 by Hans Meyer and Ludwig Purtscheller.",
        None,
    ),
    Case(
        "wrong entity",
        ("Python was created by Guido van Rossum and first released in 1991.",),
        "Who created Python?",
        "Python was created by James Gosling and first released in 1991.",
        "James Gosling",
    ),
    Case(
        "unanswerable",
        ("The library supports Python 3.9 and later. It is released under the MIT license.",),
        "What port does the library listen on?",
        "Unable to answer based on given passages.",
        None,
    ),
)


def _as_example(case: Case) -> Example:
    labels: tuple[LabelSpan, ...] = ()
    if case.hallucinated is not None:
        start = case.answer.index(case.hallucinated)
        labels = (LabelSpan(start, start + len(case.hallucinated), "number"),)
    return Example(case.name, "hand", "hand", case.context, case.question, case.answer, labels)


def run(tagger: OnnxTagger, threshold: float = 0.5) -> list[tuple[Case, bool, str, float]]:
    """(case, passed, flagged text, max probability) per case."""
    out = []
    for case in CASES:
        ex = _as_example(case)
        enc = encode(tagger.tokenizer, ex, 4096)
        probs = tagger.probabilities([enc])[0]
        flagged = [(a, b) for p, (a, b) in zip(probs, enc.answer_offsets, strict=True) if p > threshold]
        text = " | ".join(case.answer[a:b] for a, b in flagged)
        if case.hallucinated is None:
            passed = not flagged
        else:
            s = case.answer.index(case.hallucinated)
            passed = any(a < s + len(case.hallucinated) and s < b for a, b in flagged)
        out.append((case, passed, text, float(np.max(probs))))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.handchecks", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--threshold", type=float, default=0.5)
    args = parser.parse_args(argv)
    results = run(OnnxTagger(args.model), args.threshold)
    for case, passed, text, top in results:
        print(f"{'PASS' if passed else 'FAIL'}  {case.name:40s} max p={top:.3f}  flagged: {text or '-'}")
    print(f"{sum(r[1] for r in results)}/{len(results)} passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
