"""Find and validate a detector model directory (``model.onnx``, ``tokenizer.json``, ``manifest.json``).

Everything the runtime needs to know about a model comes from here, checked once at
start-up so a bad directory fails with a message naming the file and field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from truthlens.detector.calibration.probability import parse as parse_probability
from truthlens.detector.prompt import SHAPES, TEMPLATE_NAME, Shape
from truthlens.detector.spans import SpanRules
from truthlens.detector.types import AGGREGATIONS, Aggregation, DetectorError
from truthlens.detector.verdict import Verdict, VerdictModel

MANIFEST_FORMAT = "truthlens-detector/1"
KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
DEFAULT_TOKEN_THRESHOLD = 0.5  # for a model whose manifest records no calibration


class ModelDirError(DetectorError):
    """The model directory is missing, incomplete or its manifest is invalid."""

    def __init__(self, message: str) -> None:
        super().__init__("model_invalid", message)


@dataclass(frozen=True, slots=True)
class ModelManifest:
    """The validated contents of ``manifest.json`` plus the resolved file paths."""

    directory: Path
    labels: tuple[str, ...]
    hallucinated_index: int
    max_length: int
    prompt_template: str
    inputs: tuple[str, ...]
    quantization: str
    source: dict[str, Any]
    metrics: dict[str, Any]
    # The threshold chosen on tuning data for this model (training/calibrate.py); what
    # ``token_threshold`` means when a deployment does not set one.
    token_threshold: float = DEFAULT_TOKEN_THRESHOLD
    # How spans become the answer's score and the shortest span that counts, chosen with the
    # threshold; what ``aggregation`` / ``min_span_length`` mean when a deployment sets neither.
    aggregation: Aggregation = "noisy_or"
    min_span_length: int = 1
    # Whether the fact check's role check helped on the development data.
    role_checks: bool = True
    # The answer's learned verdict (training/verdict.py); None: the span rule decides alone.
    verdict: Verdict | None = None
    # Other model directories run beside this one, their token probabilities joined per
    # character (truthlens.detector.scoring.ensemble); this manifest's calibration and verdict are the
    # ensemble's.
    ensemble: tuple[Path, ...] = ()

    @property
    def model_path(self) -> Path:
        return self.directory / "model.onnx"

    @property
    def tokenizer_path(self) -> Path:
        return self.directory / "tokenizer.json"


def resolve_model_dir(model_dir: str | None) -> Path:
    """The directory to load: the given one, or the shipped default model for ``None``/"builtin"."""
    if model_dir is None or model_dir == "builtin":
        return DEFAULT_MODEL_DIR
    return Path(model_dir).expanduser()


def load_manifest(directory: Path) -> ModelManifest:
    """Read and validate ``directory``; raises :class:`ModelDirError` naming what is wrong."""
    if not directory.is_dir():
        raise ModelDirError(f"detector model directory {str(directory)!r} does not exist")
    for name in ("model.onnx", "tokenizer.json", "manifest.json"):
        if not (directory / name).is_file():
            raise ModelDirError(f"detector model directory {str(directory)!r} has no {name}")
    path = directory / "manifest.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelDirError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise ModelDirError(f"{path}: expected a JSON object")
    return _parse(directory, path, raw)


def _parse(directory: Path, path: Path, raw: dict[str, Any]) -> ModelManifest:
    def field(name: str, kind: type | tuple[type, ...]) -> Any:
        if name not in raw:
            raise ModelDirError(f"{path}: missing field {name!r}")
        value = raw[name]
        # bool is an int subclass; a boolean is never a valid count or index here
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ModelDirError(f"{path}: field {name!r} has the wrong type ({type(value).__name__})")
        return value

    fmt = field("format", str)
    if fmt != MANIFEST_FORMAT:
        raise ModelDirError(f"{path}: format {fmt!r} is not {MANIFEST_FORMAT!r}")
    labels = field("labels", list)
    if len(labels) < 2 or not all(isinstance(x, str) for x in labels):
        raise ModelDirError(f"{path}: 'labels' must list at least two label names")
    index = field("hallucinated_index", int)
    if not 0 <= index < len(labels):
        raise ModelDirError(f"{path}: 'hallucinated_index' {index} is outside 'labels'")
    max_length = field("max_length", int)
    if max_length < 32:
        raise ModelDirError(f"{path}: 'max_length' {max_length} is too small (at least 32)")
    template = field("prompt_template", str)
    if template != TEMPLATE_NAME:
        raise ModelDirError(f"{path}: prompt_template {template!r} is not supported (only {TEMPLATE_NAME!r})")
    inputs = field("inputs", list)
    unknown = [x for x in inputs if x not in KNOWN_INPUTS]
    if unknown or "input_ids" not in inputs:
        raise ModelDirError(f"{path}: 'inputs' must include 'input_ids' and only {KNOWN_INPUTS} (got {inputs})")
    quantization = raw.get("quantization", "none")
    source = raw.get("source", {})
    metrics = raw.get("metrics", {})
    if not isinstance(quantization, str) or not isinstance(source, dict) or not isinstance(metrics, dict):
        raise ModelDirError(f"{path}: 'quantization' must be a string, 'source' and 'metrics' objects")
    calibration = raw.get("calibration", {})
    threshold = calibration.get("token_threshold", DEFAULT_TOKEN_THRESHOLD) if isinstance(calibration, dict) else None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold < 1.0:
        raise ModelDirError(f"{path}: 'calibration' must be an object whose 'token_threshold' is in (0, 1)")
    aggregation = calibration.get("aggregation", "noisy_or")
    if aggregation not in AGGREGATIONS:
        raise ModelDirError(f"{path}: 'calibration.aggregation' must be one of {', '.join(AGGREGATIONS)}")
    min_span = calibration.get("min_span_length", 1)
    if isinstance(min_span, bool) or not isinstance(min_span, int) or min_span < 1:
        raise ModelDirError(f"{path}: 'calibration.min_span_length' must be an integer >= 1")
    role_checks = calibration.get("role_checks", True)
    if not isinstance(role_checks, bool):
        raise ModelDirError(f"{path}: 'calibration.role_checks' must be true or false")
    verdict = _verdict(path, raw.get("verdict"))
    ensemble = _ensemble(directory, path, raw.get("ensemble", []))
    return ModelManifest(
        directory=directory,
        labels=tuple(labels),
        hallucinated_index=index,
        max_length=max_length,
        prompt_template=template,
        inputs=tuple(inputs),
        quantization=quantization,
        source=source,
        metrics=metrics,
        token_threshold=float(threshold),
        aggregation=aggregation,
        min_span_length=min_span,
        role_checks=role_checks,
        verdict=verdict,
        ensemble=ensemble,
    )


def _ensemble(directory: Path, path: Path, raw: Any) -> tuple[Path, ...]:
    if not isinstance(raw, list) or not all(isinstance(m, str) and m for m in raw):
        raise ModelDirError(f"{path}: 'ensemble' must list model directories (\"builtin\" or a path)")
    # A relative member is read from the ensemble's own directory, wherever it is installed.
    return tuple(resolve_model_dir(m) if m == "builtin" else directory / Path(m).expanduser() for m in raw)


def require_single_model(manifest: ModelManifest) -> None:
    """Refuse an ensemble where one model serves every row (a model server, a Triton repository)."""
    if manifest.ensemble:
        raise ModelDirError(f"{manifest.directory}: an ensemble model directory runs on the 'onnx' backend only")


def load_members(manifest: ModelManifest) -> list[ModelManifest]:
    """The manifests of ``manifest``'s ensemble members; a member may not be an ensemble itself."""
    members = []
    for directory in manifest.ensemble:
        member = load_manifest(directory)
        if member.ensemble:
            raise ModelDirError(f"{manifest.directory}: ensemble member {str(directory)!r} is an ensemble itself")
        if member.labels != manifest.labels or member.hallucinated_index != manifest.hallucinated_index:
            raise ModelDirError(f"{manifest.directory}: ensemble member {str(directory)!r} has other labels")
        members.append(member)
    return members


def _verdict(path: Path, raw: Any) -> Verdict | None:
    if raw is None:
        return None
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict) or set(models) != set(SHAPES):
        raise ModelDirError(f"{path}: 'verdict.models' must give one model per task shape ({', '.join(SHAPES)})")
    parsed: dict[Shape, VerdictModel] = {}
    for shape in SHAPES:
        try:
            if not isinstance(models[shape], dict):
                raise ValueError("must be an object")
            parsed[shape] = VerdictModel.from_json(models[shape])
        except ValueError as exc:
            raise ModelDirError(f"{path}: 'verdict.models.{shape}': {exc}") from exc
    assert isinstance(raw, dict)
    rules = raw.get("token_rules", {})
    threshold = rules.get("token_threshold") if isinstance(rules, dict) else None
    aggregation = rules.get("aggregation") if isinstance(rules, dict) else None
    min_span = rules.get("min_span_length") if isinstance(rules, dict) else None
    if (isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold < 1.0
            or aggregation not in AGGREGATIONS or isinstance(min_span, bool) or not isinstance(min_span, int)
            or min_span < 1):
        raise ModelDirError(
            f"{path}: 'verdict.token_rules' must give token_threshold in (0, 1), aggregation "
            f"({', '.join(AGGREGATIONS)}) and min_span_length >= 1"
        )
    try:
        probability = parse_probability(raw.get("probability"))
    except ValueError as exc:
        raise ModelDirError(f"{path}: {exc}") from exc
    return Verdict(parsed, SpanRules(float(threshold), aggregation, min_span), probability)
