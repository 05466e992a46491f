"""An exported graph checked against its reference (torch, or the graph it was made from) on the
sample inputs: fp32 and optimised graphs by their largest logit difference on real tokens, int8
by how far its hallucination probabilities drift and how often token labels and row verdicts
agree. A graph out of tolerance raises :class:`~truthlens.detector.export.onnx_graph.ExportError`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from truthlens.detector.export.onnx_graph import ExportError

# Fused kernels reorder float sums: the optimised fp32 graph gets a little more room.
OPTIMIZED_LOGIT_TOLERANCE = 5e-3


INT8_MAX_PROB_TOLERANCE = 0.35


INT8_MEAN_PROB_TOLERANCE = 0.05


@dataclass(frozen=True, slots=True)
class Verification:
    lengths: tuple[int, ...]  # sequence lengths of the samples checked (the last is a padded batch)
    max_abs_logit_diff: float  # fp32 ONNX vs torch
    int8_max_prob_diff: float | None = None
    int8_mean_prob_diff: float | None = None
    int8_label_agreement: float | None = None
    optimized_max_abs_logit_diff: float | None = None  # optimised fp32 graph vs the reference
    int8_verdict_agreement: float | None = None  # samples whose any-token > 0.5 verdict matches


def onnx_logits(path: Path, feeds: Sequence[Mapping[str, np.ndarray]]) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return [session.run(["logits"], dict(feed))[0] for feed in feeds]


def _softmax_hallucinated(logits: np.ndarray, index: int) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    probs: np.ndarray = exp[..., index] / exp.sum(axis=-1)
    return probs


def max_diff(
    expected: Sequence[np.ndarray], got: Sequence[np.ndarray], feeds: Sequence[Mapping[str, np.ndarray]]
) -> float:
    return max(_masked_max_diff(e, g, f["attention_mask"]) for e, g, f in zip(expected, got, feeds, strict=True))


def verify_optimized(
    expected: Sequence[np.ndarray], path: Path, feeds: Sequence[Mapping[str, np.ndarray]], base: Verification
) -> Verification:
    diff = max_diff(expected, onnx_logits(path, feeds), feeds)
    if not diff <= OPTIMIZED_LOGIT_TOLERANCE:
        raise ExportError(
            f"the optimised graph's logits differ from the reference by {diff:.3g} (> {OPTIMIZED_LOGIT_TOLERANCE})"
        )
    return replace(base, optimized_max_abs_logit_diff=diff)


def _masked_max_diff(expected: np.ndarray, got: np.ndarray, mask: np.ndarray) -> float:
    if expected.shape != got.shape:
        raise ExportError(f"ONNX logits shape {got.shape} != torch {expected.shape}")
    keep = mask.astype(bool)
    return float(np.abs(expected[keep] - got[keep]).max())


def verify_int8(
    expected: Sequence[np.ndarray], path: Path, feeds: Sequence[Mapping[str, np.ndarray]], index: int,
    base: Verification,
) -> Verification:
    """int8 probabilities against the reference logits ``expected`` (torch, or the input graph)."""
    diffs, agree, total, verdicts, rows = [], 0, 0, 0, 0
    for feed, want, got in zip(feeds, expected, onnx_logits(path, feeds), strict=True):
        keep = feed["attention_mask"].astype(bool)
        p_ref_rows, p_int8_rows = _softmax_hallucinated(want, index), _softmax_hallucinated(got, index)
        p_ref, p_int8 = p_ref_rows[keep], p_int8_rows[keep]
        diffs.append(np.abs(p_ref - p_int8))
        agree += int(((p_ref > 0.5) == (p_int8 > 0.5)).sum())
        total += int(keep.sum())
        for r in range(keep.shape[0]):  # a row's verdict: any token over 0.5
            verdicts += int(bool((p_ref_rows[r][keep[r]] > 0.5).any()) == bool((p_int8_rows[r][keep[r]] > 0.5).any()))
            rows += 1
    all_diffs = np.concatenate(diffs)
    max_diff, mean_diff = float(all_diffs.max()), float(all_diffs.mean())
    if max_diff > INT8_MAX_PROB_TOLERANCE or mean_diff > INT8_MEAN_PROB_TOLERANCE:
        raise ExportError(
            f"int8 probabilities drift from the reference: max {max_diff:.3f} (limit {INT8_MAX_PROB_TOLERANCE}), "
            f"mean {mean_diff:.3f} (limit {INT8_MEAN_PROB_TOLERANCE})"
        )
    return replace(
        base, int8_max_prob_diff=max_diff, int8_mean_prob_diff=mean_diff, int8_label_agreement=agree / total,
        int8_verdict_agreement=verdicts / rows,
    )
