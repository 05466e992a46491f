"""The learned verdict (:mod:`truthlens.detector.verdict`): its features, its manifest entry, and
the engine scoring answers with it.

The parsing and feature tests are pure. The engine test runs the tiny hand-weighted ONNX model
(conftest) through the real pipeline with a verdict written into its manifest, so which signal
decides is known exactly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.facts import Finding
from truthlens.detector.manifest import ModelDirError, load_manifest
from truthlens.detector.spans import SpanRules
from truthlens.detector.types import DetectionInput, DetectorSettings
from truthlens.detector.verdict import FEATURES, Signals, VerdictModel, features, sentences

RULES = SpanRules(token_threshold=0.5, aggregation="noisy_or", min_span_length=1)


def test_features_count_findings_by_kind_and_measure_the_flagged_tokens() -> None:
    answer = "It opened in 1925 in Berlin."
    offsets = np.array([[0, 2], [3, 9], [10, 12], [13, 17], [18, 20], [21, 27], [27, 28]])
    probs = np.array([0.1, 0.1, 0.1, 0.95, 0.1, 0.9, 0.0], dtype=np.float32)
    findings = (Finding(13, 17, "1925", "unsupported_date"), Finding(21, 27, "Berlin", "misattributed_entity"))
    got = features(Signals(probs, offsets, findings, answer, "passages", (0.4, 0.7)), RULES)
    assert set(got) == set(FEATURES)
    assert got["peak"] == pytest.approx(0.95)
    assert got["flagged_share"] == pytest.approx(2 / 7)
    assert got["noisy_or"] == pytest.approx(1 - 0.05 * 0.1)
    assert (got["numbers_dates"], got["roles"], got["names"]) == (math.log1p(1), math.log1p(1), 0.0)
    assert (got["support_min"], got["support_mean"]) == (0.4, 0.7)
    no_support = features(Signals(probs, offsets, (), answer, "record", None), RULES)
    assert math.isnan(no_support["support_min"]) and math.isnan(no_support["support_mean"])
    # Novelty: the share of content words the context never uses ("berlin" and "1925" here).
    known = features(Signals(probs, offsets, (), answer, "passages", None, frozenset({"opened"})), RULES)
    assert known["novel_share"] == pytest.approx(2 / 3)


def test_moved_terms_and_record_fields_count_on_their_own_too() -> None:
    # A name moved from another clause and a record's yes/no field stated the other way round
    # count under their generic reasons and again under their own features.
    from truthlens.detector.facts import check_facts

    context = ["Anna Berg founded the firm with Clara Engel in 1990. Hugo Dahl joined it in 2001 as an engineer."]
    answer = "Anna Berg founded the firm with Hugo Dahl in 1990."
    found = check_facts(answer, context).findings
    assert [(f.text, f.reason, f.check) for f in found] == [("Hugo Dahl", "misattributed_entity", "clause")], found
    offsets = np.array([[0, 4], [5, 9], [10, 17], [18, 21], [22, 26], [27, 31], [32, 36], [37, 41], [42, 44],
                        [45, 49], [49, 50]])
    probs = np.full(len(offsets), 0.1, dtype=np.float32)
    got = features(Signals(probs, offsets, found, answer, "passages", None), RULES)
    assert (got["moved"], got["roles"], got["fields"]) == (math.log1p(1), math.log1p(1), 0.0)
    record = ('{"name": "Cafe Lune", "RestaurantsDelivery": false}',)
    said = "Cafe Lune offers delivery."
    fields = check_facts(said, record, "Tell me whether they deliver.").findings
    got = features(Signals(probs, offsets, fields, said, "record", None), RULES)
    assert [f.check for f in fields] == ["record"]
    assert (got["fields"], got["relations"], got["moved"]) == (math.log1p(1), math.log1p(1), 0.0)


def _model(**overrides: object) -> dict[str, object]:
    """One shape's model: all-zero weights unless overridden."""
    n = len(FEATURES)
    raw: dict[str, object] = {
        "features": list(FEATURES), "mean": [0.0] * n, "scale": [1.0] * n, "weights": [0.0] * n,
        "bias": 0.0, "shift": 0.0,
    }
    raw.update(overrides)
    return raw


def _verdict(model: dict[str, object], **overrides: object) -> dict[str, object]:
    """A manifest ``verdict`` entry with ``model`` for every task shape."""
    raw: dict[str, object] = {
        "models": {shape: model for shape in ("passages", "article", "record")},
        "token_rules": {"token_threshold": 0.5, "aggregation": "noisy_or", "min_span_length": 1},
        # The identity map (P = sigmoid of the log-odds): these tests are about the models.
        "probability": {"tasks": {shape: {"slope": 1.0, "intercept": 0.0, "prior": 0.5}
                                  for shape in ("passages", "article", "record")}},
    }
    raw.update(overrides)
    return raw


def test_the_served_score_is_one_half_at_the_operating_point() -> None:
    weights = [0.0] * len(FEATURES)
    weights[FEATURES.index("peak")] = 4.0
    model = VerdictModel.from_json(_model(weights=weights, bias=-2.0, shift=1.0))
    values = {name: 0.0 for name in FEATURES}
    values["peak"] = 0.75  # log-odds 4 * 0.75 - 2 = 1.0, the shift
    assert model.score(values) == pytest.approx(0.5)
    assert model.probability(values) == pytest.approx(1 / (1 + math.exp(-1.0)))
    values["support_min"] = math.nan  # a missing signal counts as its mean: no effect
    assert model.score(values) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("verdict", "message"),
    [
        (_verdict(_model(features=["peak", "shoe_size"])), "'verdict.models.passages': 'features' must list known"),
        (_verdict(_model(weights=[1.0])), "'weights' must list one finite number per feature"),
        (_verdict(_model(scale=[0.0] * len(FEATURES))), "'scale' must be positive"),
        (_verdict(_model(bias="high")), "'bias' must be a finite number"),
        (_verdict(_model(), models={"passages": _model()}), "'verdict.models' must give one model per task shape"),
        (_verdict(_model(), token_rules={"token_threshold": 2}), "'verdict.token_rules' must give"),
    ],
)
def test_a_bad_verdict_in_the_manifest_is_named_at_start_up(
    tmp_path: Path, tiny_model_dir: Path, verdict: dict[str, object], message: str
) -> None:
    directory = _with_verdict(tmp_path, tiny_model_dir, verdict)
    with pytest.raises(ModelDirError, match=message):
        load_manifest(directory)


def _with_verdict(tmp_path: Path, source: Path, verdict: dict[str, object]) -> Path:
    directory = tmp_path / "m"
    directory.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (directory / name).write_bytes((source / name).read_bytes())
    raw = json.loads((source / "manifest.json").read_text())
    raw["verdict"] = verdict
    (directory / "manifest.json").write_text(json.dumps(raw))
    return directory


async def test_the_engine_scores_the_answer_with_the_manifests_verdict(tmp_path: Path, tiny_model_dir: Path) -> None:
    # A verdict that reads only the number/date findings: the tiny model flags "berlin" and
    # "1925" whatever the context, so the span rule flags both answers below; the verdict
    # flags only the one whose year the context does not state.
    weights = [0.0] * len(FEATURES)
    weights[FEATURES.index("numbers_dates")] = 10.0
    directory = _with_verdict(tmp_path, tiny_model_dir, _verdict(_model(weights=weights, bias=-1.0)))
    context = ["The museum in Berlin opened in 1931."]
    wrong = DetectionInput(context, "When did it open?", "The museum in Berlin opened in 1925.")
    right = DetectionInput(context, "Where is it?", "The museum is in Berlin.")
    with_verdict = create_detector(DetectorSettings(model_dir=str(directory), chunk_aggregation="max"))
    rule_only = create_detector(DetectorSettings(model_dir=str(directory), chunk_aggregation="max",
                                                 learned_verdict=False))
    try:
        flagged = await with_verdict.detect(wrong, threshold=0.5)
        clean = await with_verdict.detect(right, threshold=0.5)
        by_rule = await rule_only.detect(right, threshold=0.5)
    finally:
        await with_verdict.close()
        await rule_only.close()
    assert flagged.status == "detected"
    assert flagged.score == pytest.approx(1 / (1 + math.exp(-(10 * math.log(2) - 1))))
    assert [(s.text, s.reason) for s in flagged.spans] == [("Berlin", "model"), ("1925", "unsupported_date")]
    assert clean.status == "clean" and clean.score == pytest.approx(1 / (1 + math.e))
    assert clean.spans == ()  # the model flagged "Berlin", but a clean answer shows no spans
    assert by_rule.status == "detected" and [s.text for s in by_rule.spans] == ["Berlin"]


@pytest.mark.parametrize("reads_support", [False, True])
async def test_the_embedder_pass_runs_only_for_a_verdict_that_reads_it(
    tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, reads_support: bool
) -> None:
    # The support score is one embedder pass per answer, about a model run on a short new
    # context: a verdict whose models leave its features out must not pay for it.
    import truthlens.detector.engine as engine_module
    from truthlens.detector.relevance import SentenceEncoder
    from truthlens.detector.verdict import SUPPORT_FEATURES, support_scores

    names = [n for n in FEATURES if reads_support or n not in SUPPORT_FEATURES]
    model = {"features": names, "mean": [0.0] * len(names), "scale": [1.0] * len(names),
             "weights": [1.0 if n == "peak" else 0.0 for n in names], "bias": 0.0, "shift": 0.0}
    directory = _with_verdict(tmp_path, tiny_model_dir, _verdict(model))
    calls: list[str] = []

    def counted(
        answer: str, context: Sequence[str], encoder: SentenceEncoder | None
    ) -> tuple[float, float] | None:
        calls.append(answer)
        return support_scores(answer, context, encoder)

    monkeypatch.setattr(engine_module, "support_scores", counted)
    detector = create_detector(DetectorSettings(model_dir=str(directory)))
    try:
        assert detector.verdict is not None and detector.verdict.uses_support is reads_support
        result = await detector.detect(
            DetectionInput(["The museum in Berlin opened in 1931."], "When?", "It opened in 1925."), threshold=0.5
        )
    finally:
        await detector.close()
    assert result.status in ("detected", "clean")
    assert calls == (["It opened in 1925."] if reads_support else [])


def test_sentences_are_cut_and_short_fragments_dropped() -> None:
    assert sentences("Paris. It is the capital of France! Is it big?\nYes") == ["It is the capital of France!",
                                                                             "Is it big?"]
