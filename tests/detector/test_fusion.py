"""Model + fact check: fused token probabilities, span reasons, and the ``evidence_checks`` switch.

The engine tests run real ONNX Runtime on the hand-weighted lookup model from ``conftest.py``
(it flags "lyon", "berlin", "1925", "北" whatever the context), so which spans come from the
model and which from the fact check is known exactly; nothing is scripted.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from truthlens.detector.backends.factory import check_settings, create_detector
from truthlens.detector.cli import main as detect_main
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.facts import Finding
from truthlens.detector.fusion import REASON_WEIGHTS, RESTATED_KEEP, discount, fuse, label
from truthlens.detector.spans import SpanRules, score_answer
from truthlens.detector.types import DetectionInput, DetectorSettings, Span
from truthlens.gateway.policy.config import parse_config
from truthlens.options import ConfigError

REPO = Path(__file__).resolve().parents[2]
CONTEXT = ("Berlin is the capital of Germany. The wall fell in 1989.",)


def _detector(model_dir: Path, **overrides: Any) -> DetectorEngine:
    detector = create_detector(DetectorSettings(model_dir=str(model_dir), provider="cpu", intra_op_threads=1,
                                                **overrides))
    assert isinstance(detector, DetectorEngine)
    return detector


def test_each_reason_alone_lifts_a_clean_token_over_the_default_thresholds() -> None:
    rules = SpanRules(token_threshold=0.5, aggregation="noisy_or")
    answer = "It fell in 1991."
    offsets = np.array([[0, 2], [3, 7], [8, 10], [11, 15], [15, 16]])
    probs = np.full(5, 0.05, dtype=np.float32)
    for reason in REASON_WEIGHTS:
        finding = Finding(11, 15, "1991", reason)
        fused = fuse(probs, offsets, [finding])
        assert fused[3] == pytest.approx(1 - 0.95 * (1 - REASON_WEIGHTS[reason]))
        assert fused[3] > 0.5 and list(np.delete(fused, 3)) == list(np.delete(probs, 3))
        score, spans = score_answer(fused, offsets, answer, rules)
        (span,) = label(spans, [finding])
        assert score > 0.5 and (span.text, span.reason) == ("1991", reason)
    assert probs[3] == pytest.approx(0.05)  # fuse never writes into the model's array


def test_fusion_never_lowers_the_model_and_the_strongest_reason_wins() -> None:
    offsets = np.array([[0, 4], [5, 9]])
    probs = np.array([0.97, 0.2], dtype=np.float32)
    findings = [Finding(0, 9, "Lyon 1925", "unsupported_entity"), Finding(5, 9, "1925", "unsupported_date")]
    fused = fuse(probs, offsets, findings)
    assert fused[0] >= probs[0] and fused[1] > 0.9
    _, spans = score_answer(fused, offsets, "Lyon 1925", SpanRules(token_threshold=0.5, aggregation="noisy_or"))
    assert [(s.text, s.reason) for s in label(spans, findings)] == [("Lyon 1925", "unsupported_date")]
    assert [s.reason for s in label(spans, [])] == ["model"]


def test_a_finding_inside_a_longer_model_span_is_its_own_span() -> None:
    # The model flags the whole clause; the role check names the wrong name in it. The reason
    # goes on the name; the rest stays the model's, with its own tokens' probability.
    answer = "Aldrin stayed in lunar orbit aboard Columbia."
    offsets = np.array([[0, 6], [7, 13], [14, 16], [17, 22], [23, 28], [29, 35], [36, 44], [44, 45]])
    probs = np.array([0.95, 0.7, 0.6, 0.6, 0.6, 0.6, 0.8, 0.1], dtype=np.float32)
    _, spans = score_answer(probs, offsets, answer, SpanRules(token_threshold=0.5, aggregation="span_mean"))
    assert [s.text for s in spans] == ["Aldrin stayed in lunar orbit aboard Columbia"]
    finding = Finding(0, 6, "Aldrin", "misattributed_entity")
    pieces = label(spans, [finding], probs, offsets)
    assert [(s.text, s.reason) for s in pieces] == [
        ("Aldrin", "misattributed_entity"), ("stayed in lunar orbit aboard Columbia", "model")]
    assert [s.prob for s in pieces] == pytest.approx([0.95, 0.8])
    assert all(answer[s.start : s.end] == s.text for s in pieces)
    # A connective between two findings is no claim of its own.
    two = [Finding(0, 6, "Aldrin", "misattributed_entity"), Finding(36, 44, "Columbia", "unsupported_entity")]
    middle = Span(0, 44, answer[:44], 0.9)
    assert [s.text for s in label([middle], two)] == ["Aldrin", "stayed in lunar orbit aboard", "Columbia"]
    connective = Span(0, 20, "Lyon and 1925 Paris", 0.9)
    found = [Finding(0, 4, "Lyon", "unsupported_entity"), Finding(9, 13, "1925", "unsupported_date")]
    assert [s.text for s in label([connective], found)] == ["Lyon", "1925", "Paris"]
    # A finding's characters are kept as they are; only the model's rest is trimmed.
    built = "It was built in the U.S. by Acme"
    us = [Finding(20, 24, "U.S.", "unsupported_entity")]
    assert [(s.text, s.reason) for s in label([Span(16, 32, built[16:32], 0.9)], us)] == [
        ("U.S.", "unsupported_entity"), ("by Acme", "model")]


async def test_a_fact_the_model_misses_becomes_a_span_with_its_reason(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    answer = "Berlin is the capital of Germany; the wall fell in 1991 under Helmut Kohl."
    result = await detector.detect(DetectionInput(CONTEXT, "When did the wall fall?", answer), threshold=0.5)
    assert result.detected and result.score is not None and result.score > 0.9
    # The lookup model also flags "Berlin", but its clause restates the context's first sentence
    # word for word, so that flag is weakened under the threshold (facts/restatements.py).
    assert [(s.text, s.reason) for s in result.spans] == [
        ("1991", "unsupported_date"),
        ("Helmut Kohl", "unsupported_entity"),
    ]
    for span in result.spans:
        assert answer[span.start : span.end] == span.text
    await detector.close()


async def test_evidence_checks_false_leaves_the_model_alone(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir, evidence_checks=False)
    item = DetectionInput(CONTEXT, "When did the wall fall?", "The wall fell in 1991 under Helmut Kohl.")
    result = await detector.detect(item, threshold=0.5)
    assert (result.status, result.score, result.spans) == ("clean", 0.0, ())
    await detector.close()
    detector = _detector(tiny_model_dir)
    assert (await detector.detect(item, threshold=0.5)).detected
    await detector.close()


async def test_a_supported_answer_stays_clean(tiny_model_dir: Path) -> None:
    detector = _detector(tiny_model_dir)
    result = await detector.detect(DetectionInput(CONTEXT, "q", "The wall fell in 1989 in Germany."), threshold=0.5)
    assert (result.status, result.spans) == ("clean", ())
    await detector.close()


def test_settings_and_config_validate_the_switch() -> None:
    with pytest.raises(ValueError, match="evidence_checks 'yes' is not true or false"):
        check_settings(DetectorSettings(evidence_checks="yes"))  # type: ignore[arg-type]
    doc = yaml.safe_load((REPO / "configs" / "config.yaml").read_text("utf-8"))
    assert parse_config(doc).detector.evidence_checks is True
    doc["detector"]["evidence_checks"] = False
    assert parse_config(doc).detector.evidence_checks is False
    doc["detector"]["evidence_checks"] = "no"
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    assert info.value.key == "detector.evidence_checks" and "true or false" in str(info.value)


def test_cli_writes_the_reason_and_can_switch_the_check_off(tmp_path: Path, tiny_model_dir: Path) -> None:
    line = {"context": list(CONTEXT), "question": "When?", "answer": "The wall fell in 1991."}
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(line) + "\n", encoding="utf-8")
    records = []
    for flags in ([], ["--no-evidence-checks"]):
        out = io.StringIO()
        assert detect_main(["--input", str(source), "--model", str(tiny_model_dir), *flags], stdout=out,
                           stderr=io.StringIO()) == 0
        records.append(json.loads(out.getvalue()))
    with_check, without = records
    assert with_check["detected"] is True
    assert [{k: s[k] for k in ("start", "end", "text", "reason")} for s in with_check["spans"]] == [
        {"start": 17, "end": 21, "text": "1991", "reason": "unsupported_date"}]
    assert without == {"score": 0.0, "detected": False, "spans": []}


def test_restated_values_lower_the_model_inside_them_only() -> None:
    offsets = np.array([[0, 3], [4, 8], [9, 15]], dtype=np.int64)
    probs = np.array([0.2, 0.8, 0.7], dtype=np.float32)
    lowered = discount(probs, offsets, [(4, 8)], RESTATED_KEEP)
    assert lowered[1] == pytest.approx(0.8 * RESTATED_KEEP)
    assert lowered[0] == pytest.approx(0.2) and lowered[2] == pytest.approx(0.7)
    assert probs[1] == pytest.approx(0.8)  # a copy: the model's own output is not changed
    assert discount(probs, offsets, [], RESTATED_KEEP) is probs
