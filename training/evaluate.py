"""Scores an exported detector model directory on corpus splits, through ONNX Runtime.

The model is run exactly as it is shipped (``model.onnx`` + ``tokenizer.json``), so fp32
and int8 exports are compared on equal terms. Reports token-level and example-level
precision/recall/F1 of the "hallucinated" class, recall per hallucination kind and the
false-alarm rate on supported answers.

    python -m training.evaluate --model src/truthlens/detector/default_model --corpus training/output/corpus
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from training.corpus.builder import Example
from training.corpus.splits import read_jsonl
from training.encode import Encoded, TooLong, encode
from truthlens.detector.manifest import load_manifest


@dataclass(frozen=True, slots=True)
class Scores:
    examples: int
    skipped_too_long: int
    token_precision: float
    token_recall: float
    token_f1: float
    example_precision: float
    example_recall: float
    example_f1: float
    clean_false_alarm_rate: float
    recall_by_kind: dict[str, float]


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall and F1 from counts (0.0 where undefined)."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def auroc(scores: Sequence[float], truth: Sequence[bool]) -> float:
    """Area under the ROC curve (Mann–Whitney U with tied ranks averaged); 0.5 without both classes."""
    values = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(truth, dtype=bool)
    pos, neg = int(labels.sum()), int((~labels).sum())
    if not pos or not neg:
        return 0.5
    # Each distinct value's rank is the mean of the ranks its ties occupy.
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2)[inverse]
    return float((ranks[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))


class OnnxTagger:
    """Runs a model directory over encoded examples; returns P(hallucinated) per labelled token."""

    def __init__(self, model_dir: Path, threads: int = 2) -> None:
        self.manifest = load_manifest(model_dir)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"])

    def probabilities(self, batch: Sequence[Encoded]) -> list[np.ndarray]:
        width = max(len(e.input_ids) for e in batch)
        cols = {
            "input_ids": [e.input_ids + [0] * (width - len(e.input_ids)) for e in batch],
            "attention_mask": [[1] * len(e.input_ids) + [0] * (width - len(e.input_ids)) for e in batch],
            "token_type_ids": [e.token_type_ids + [0] * (width - len(e.input_ids)) for e in batch],
        }
        feed = {name: np.asarray(cols[name], dtype=np.int64) for name in self.manifest.inputs}
        logits = self.session.run(["logits"], feed)[0]
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs = shifted[..., self.manifest.hallucinated_index] / shifted.sum(axis=-1)
        return [probs[i, : len(e.labels)][np.asarray(e.labels) != -100] for i, e in enumerate(batch)]


def score(
    tagger: OnnxTagger,
    examples: Sequence[Example],
    *,
    threshold: float = 0.5,
    max_length: int = 512,
    batch_size: int = 16,
) -> Scores:
    encoded: list[tuple[Example, Encoded]] = []
    skipped = 0
    for ex in examples:
        try:
            encoded.append((ex, encode(tagger.tokenizer, ex, max_length)))
        except TooLong:
            skipped += 1
    encoded.sort(key=lambda pair: len(pair[1].input_ids))
    tok = Counter[str]()
    exa = Counter[str]()
    kinds_total, kinds_hit = Counter[str](), Counter[str]()
    clean, false_alarms = 0, 0
    for i in range(0, len(encoded), batch_size):
        chunk = encoded[i : i + batch_size]
        for (ex, enc), probs in zip(chunk, tagger.probabilities([e for _, e in chunk]), strict=True):
            gold = np.asarray([label for label in enc.labels if label != -100]) == 1
            pred = probs > threshold
            tok["tp"] += int((gold & pred).sum())
            tok["fp"] += int((~gold & pred).sum())
            tok["fn"] += int((gold & ~pred).sum())
            flagged, truth = bool(pred.any()), ex.hallucinated
            exa["tp"] += flagged and truth
            exa["fp"] += flagged and not truth
            exa["fn"] += truth and not flagged
            if not truth:
                clean += 1
                false_alarms += flagged
            for kind in {span.kind for span in ex.labels}:
                kinds_total[kind] += 1
                # a kind counts as found when a token inside one of its spans is flagged
                spans = [s for s in ex.labels if s.kind == kind]
                hit = any(
                    p and any(a < s.end and s.start < b for s in spans)
                    for p, (a, b) in zip(pred, enc.answer_offsets, strict=True)
                )
                kinds_hit[kind] += hit
    tp, tr, tf = prf(tok["tp"], tok["fp"], tok["fn"])
    ep, er, ef = prf(exa["tp"], exa["fp"], exa["fn"])
    return Scores(
        examples=len(encoded), skipped_too_long=skipped,
        token_precision=round(tp, 4), token_recall=round(tr, 4), token_f1=round(tf, 4),
        example_precision=round(ep, 4), example_recall=round(er, 4), example_f1=round(ef, 4),
        clean_false_alarm_rate=round(false_alarms / clean, 4) if clean else 0.0,
        recall_by_kind={k: round(kinds_hit[k] / kinds_total[k], 3) for k in sorted(kinds_total)},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="exported model directory")
    parser.add_argument("--corpus", type=Path, default=Path("training/output/corpus"))
    parser.add_argument("--splits", nargs="+", default=["test", "heldout"])
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    tagger = OnnxTagger(args.model, args.threads)
    results = {
        split: asdict(score(tagger, read_jsonl(args.corpus / f"{split}.jsonl"), threshold=args.threshold))
        for split in args.splits
    }
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
