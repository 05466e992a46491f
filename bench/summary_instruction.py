"""Whether a summary needs both of the wordings its answer is scored under.

A summary's answer is scored by the model under the two instructions it learned summaries with
(``prompt.MODEL_INSTRUCTIONS``: RAGTruth's "Summarize the following news article." and HaluEval's
"Summarize the article."), the probabilities averaged: two model passes per check. This bench
scores the development summaries (RAGTruth's odd-``source_id`` dev part, the first answers of
HaluEval's dev fold i % 10 == 1; never the evaluation halves) under each wording alone and under
both, and prints per set the AUROC of the answer's highest token probability (the signal the
choice was made on), the shipped verdict's AUROC and balanced accuracy (fitted on the averaged
probabilities, so a single wording shifts its inputs), the share of faithful answers flagged,
and the model's CPU time per check.

    python -m bench.summary_instruction [--items 100]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bench.detector_quality import settings_for
from training.corpus import halueval, ragtruth
from training.scoring import Case, Decision, halueval_cases, metrics, ragtruth_cases, score_cases
from truthlens.detector import prompt
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine

SECOND = "Summarize the article."
VARIANTS: dict[str, tuple[str, ...]] = {
    "both, averaged (shipped)": (prompt.SUMMARY_INSTRUCTION, SECOND),
    "RAGTruth's wording alone": (prompt.SUMMARY_INSTRUCTION,),
    "HaluEval's wording alone": (SECOND,),
}


@contextmanager
def wordings(chosen: tuple[str, ...]) -> Iterator[None]:
    saved = dict(prompt.MODEL_INSTRUCTIONS)
    prompt.MODEL_INSTRUCTIONS[prompt.SUMMARY_INSTRUCTION] = chosen
    try:
        yield
    finally:
        prompt.MODEL_INSTRUCTIONS.clear()
        prompt.MODEL_INSTRUCTIONS.update(saved)


def dev_sets(items: int) -> dict[str, list[Case]]:
    root = halueval.fetch()
    return {"ragtruth summary (dev)": ragtruth_cases("summary", ("dev",), ragtruth.DEFAULT_DIR),
            "halueval summarization (dev)": halueval_cases("summarization", ("dev",), root, items // 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.summary_instruction", description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100, help="HaluEval dev answers (half hallucinated)")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="which wordings to score (default: all three)")
    args = parser.parse_args(argv)
    sets = dev_sets(args.items)
    engine = create_detector(settings_for())
    assert isinstance(engine, DetectorEngine), "the bench scores tokens in process (backend: onnx)"
    decision = Decision(engine.rules, 0.5, engine.verdict)
    peak = Decision(engine.rules, 0.5, None)  # ranking by the answer's highest token probability
    print(f"{'wording':<26} {'set':<30} {'n':>4} {'peak AUROC':>10} {'verdict AUROC':>13} {'BA':>6} "
          f"{'faithful flagged':>16} {'ms/check':>9}")
    try:
        for name in args.variants:
            with wordings(VARIANTS[name]):
                for set_name, cases in sets.items():
                    started = time.process_time()
                    scored = asyncio.run(score_cases(engine, cases))
                    ms = 1000 * (time.process_time() - started) / len(cases)
                    m, p = metrics(scored, decision), metrics(scored, peak)
                    print(f"{name:<26} {set_name:<30} {len(cases):>4} {p.auroc:>10.3f} {m.auroc:>13.3f} "
                          f"{m.balanced_accuracy:>6.3f} {m.false_alarms:>16.3f} {ms:>9.0f}", flush=True)
    finally:
        asyncio.run(engine.close())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
