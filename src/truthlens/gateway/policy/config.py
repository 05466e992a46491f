"""YAML → validated, versioned, frozen :class:`Config` (hot reload:
:class:`~truthlens.gateway.policy.config_store.ConfigStore`; the ``detector:`` and ``models:``
sections: :mod:`~truthlens.gateway.policy.backend_config`).

Every error names its key path (``decisions[1].rules.conditions[0].type: ...``); unknown keys
are errors. A decision's ``configuration`` is merged over the global ``hallucination``
section into a :class:`RouteSettings`; the keys a mode owns are validated by the mode module
itself (``parse_options``), with the global ``hallucination.<mode>`` section as defaults.
A reload swaps one reference: streams keep the snapshot they pinned at their first message.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import yaml

from truthlens.detector.types import (
    DetectorSettings,
)
from truthlens.gateway.apis import endpoints
from truthlens.gateway.apis.context.settings import ContextSettings, parse_templates
from truthlens.gateway.apis.interface import WarningSpec
from truthlens.gateway.policy.backend_config import parse_detector, parse_models
from truthlens.gateway.policy.config_yaml import load_yaml, yaml_error
from truthlens.gateway.policy.decisions import Rule, Vocabulary, compile_rules, uses_domains
from truthlens.gateway.policy.delivery import Action, StreamingMode, parse_actions, resolve_streaming
from truthlens.gateway.policy.domains import DomainSet
from truthlens.gateway.policy.thresholds import parse_threshold, task_priors
from truthlens.gateway.policy.vocabulary import parse_vocabulary
from truthlens.llm import Endpoint as ModelEndpoint
from truthlens.modes import registry
from truthlens.options import ConfigError, OptionContext, Section, schema_alias

if TYPE_CHECKING:
    from truthlens.evidence.gating import EvidenceSettings

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
DEFAULT_MAX_STREAMS = 2048  # per worker; an idle held stream costs about 20 KB
WarningPosition = Literal["prepend", "append"]
FailPolicy = Literal["open", "closed"]

DEFAULT_WARNING = (
    "⚠️ Warning: parts of this answer could not be verified against the provided context. "
    "Check key facts before acting on them."
)


@dataclass(frozen=True, slots=True)
class Budgets:
    detection_s: float  # one detector call
    total_s: float  # the whole check of one exchange (refinement loops included)


# What a route does with a request that carries no grounding context (no extension field
# passages, no tool messages, no system context where the route reads it): "skip" answers it
# unchecked and says so (x-truthlens-detected: skipped, reason no_context), "check" checks it
# anyway (every claim is then unsupported), "block" refuses it before it reaches the upstream.
NoContextPolicy = Literal["skip", "check", "block"]
NO_CONTEXT_POLICIES: tuple[NoContextPolicy, ...] = ("skip", "check", "block")


@dataclass(frozen=True, slots=True)
class RouteSettings:
    mode: str
    threshold: float
    actions: frozenset[Action]
    warning_template: str
    warning_position: WarningPosition
    fail_policy: FailPolicy
    streaming: StreamingMode  # "auto" resolved at load
    budgets: Budgets
    context: ContextSettings
    spans_request_header: str  # lower-case
    max_body_bytes: int
    options: Any  # the mode's parsed options
    evidence: EvidenceSettings | None = None  # gating settings (truthlens.evidence), None: off
    enabled: bool = True  # only the global defaults can be disabled (a decision is then None)
    # A request with no grounding context: skip (not checked, said so), check, or block (refused).
    no_context: NoContextPolicy = "skip"
    # Flagged answers go to detector.confirm, which confirms or clears each span (the cascade).
    confirm: bool = False
    # How ``threshold`` was chosen: "" (a number), a preset's name, or "miss_cost=…,prior=…".
    threshold_basis: str = ""
    # τ per task shape where costs with a route prior make it depend on the task's own prior
    # (thresholds.py); empty: ``threshold`` for every task. :meth:`for_task` applies it.
    task_thresholds: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # The warning goes on every checked answer (with the body action), flagged or not.
    require_disclaimer: bool = False

    @property
    def warning(self) -> WarningSpec:
        return WarningSpec(self.warning_template, self.warning_position)

    def for_task(self, shape: str) -> RouteSettings:
        """These settings with the τ in force for a request read as ``shape`` (passages, article,
        record): every later step (the mode, the span, ``/v1/check``) reads ``threshold``."""
        tau = self.task_thresholds.get(shape)
        return self if tau is None or tau == self.threshold else replace(self, threshold=tau)


@dataclass(frozen=True, slots=True)
class Decision:
    name: str
    priority: int
    rules: Rule
    route: RouteSettings | None  # None: detection disabled on this route
    description: str = ""


@dataclass(frozen=True, slots=True)
class Config:
    version: int
    detector: DetectorSettings
    models: Mapping[str, ModelEndpoint]
    hallucination: RouteSettings  # the global defaults, resolved with the default mode
    decisions: tuple[Decision, ...]  # by priority, highest first (ties: file order)
    digest: str = ""  # sha256 prefix of the file's bytes: names the version in logs
    source: str | None = None
    # gateway.max_streams: ext_proc streams one worker keeps open at once; beyond it an exchange
    # is not checked at all (reason worker_overloaded) instead of holding more memory.
    max_streams: int = DEFAULT_MAX_STREAMS
    # The domains requests are classified into; None when no decision has a domain condition
    # (then no request is classified).
    domains: DomainSet | None = None


# ---------------------------------------------------------------------------- loading


def load_config(path: str | os.PathLike[str]) -> Config:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(str(p), f"cannot read: {exc.strerror or exc}") from None
    return parse_bytes(data, p)


def parse_bytes(data: bytes, p: Path) -> Config:
    try:
        raw = load_yaml(data)
    except yaml.YAMLError as exc:
        raise yaml_error(exc) from None
    return parse_config(
        raw,
        base_dir=Path(os.path.abspath(p)).parent,  # relative paths: from the file's folder, whatever the cwd
        source=str(p),
        digest=hashlib.sha256(data).hexdigest()[:12],
    )


def parse_config(
    mapping: Any,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    source: str | None = None,
    digest: str = "",
) -> Config:
    """Validate a loaded YAML document. ``base_dir`` anchors relative paths (the model dir)."""
    root = Section(mapping, "")
    root.allow("version", "gateway", "detector", "models", "hallucination", "decisions", "domains", "keywords")
    version = root.get("version", schema={"const": SCHEMA_VERSION}, required=True)
    if version != SCHEMA_VERSION:
        raise ConfigError("version", f"unsupported schema version {version!r} (expected {SCHEMA_VERSION})")
    models = parse_models(root.section("models"))
    detector = parse_detector(root.section("detector"), Path(base_dir) if base_dir is not None else None, models)
    model_names = frozenset(models)
    global_section = root.section("hallucination")
    mode_defaults = _parse_mode_sections(global_section, model_names)
    backend = _Backend(detector.confirm is not None, task_priors(detector))
    hallucination = _resolve_route(None, global_section, mode_defaults, model_names, backend)
    listed = root.get("decisions", [], schema={"type": "array"})
    vocabulary, domain_set = parse_vocabulary(root)
    decisions = _parse_decisions(listed, global_section, mode_defaults, model_names, backend, vocabulary)
    gateway = root.section("gateway")
    gateway.allow("max_streams")
    return Config(
        max_streams=gateway.integer("max_streams", DEFAULT_MAX_STREAMS, lo=1),
        version=SCHEMA_VERSION,
        detector=detector,
        models=MappingProxyType(models),
        hallucination=hallucination,
        decisions=decisions,
        digest=digest,
        source=source,
        domains=domain_set if any(uses_domains(d.rules) for d in decisions) else None,
    )


_GENERIC_KEYS = (
    "enabled", "mode", "threshold", "actions", "warning_template", "warning_position",
    "fail_policy", "streaming", "spans_request_header", "context", "budgets",
    "max_body_bytes", "evidence", "no_context", "confirm", "require_disclaimer",
)
_NESTED_KEYS = ("context", "budgets", "evidence")


def _parse_mode_sections(g: Section, models: frozenset[str]) -> dict[str, Mapping[str, Any]]:
    """Validate the global ``hallucination.<mode>`` sections; return them raw, as defaults."""
    g.allow("default_mode", *(k for k in _GENERIC_KEYS if k != "mode"), *registry.mode_names())
    defaults: dict[str, Mapping[str, Any]] = {}
    for mode in registry.mode_names():
        if mode in g:
            section = g.section(mode)
            _parse_options(mode, section.raw, section.path, models)
            defaults[mode] = section.raw
    return defaults


def _mode_module(mode: str, path: str) -> registry.ModeModule:
    """The module of a known mode; a mode whose dependencies are missing is a config error
    at ``path`` (the section that asked for it), not a crash."""
    try:
        return registry.load_mode_module(mode)
    except ImportError as exc:
        raise ConfigError(path, f"mode {mode!r} is not available: {exc}") from None


def _parse_options(mode: str, raw: Mapping[str, Any], path: str, models: frozenset[str]) -> Any:
    # A route's mode keys are the mode's own, wherever they are written (hallucination.<mode> or a decision).
    with schema_alias(path, f"hallucination.{mode}"):
        try:
            return _mode_module(mode, path).parse_options(raw, OptionContext(path=path, models=models))
        except ConfigError as exc:
            raise _near_generic_key(exc) or exc from None


def _near_generic_key(exc: ConfigError) -> ConfigError | None:
    """A route key the mode does not know that is a near miss of a generic one (``mdoe``): say which."""
    name = exc.key.rpartition(".")[2]
    if not exc.problem.startswith("unknown key"):
        return None
    close = difflib.get_close_matches(name, _GENERIC_KEYS, n=1, cutoff=0.75)
    return ConfigError(exc.key, f"unknown key (did you mean {close[0]!r}?)") if close else None


class _Layers:
    """A key's value from the decision's configuration, else the global section; remembers
    which one it came from so errors name the right path."""

    def __init__(self, *sections: Section) -> None:
        self.sections = sections

    def pick(self, name: str) -> Section:
        for s in self.sections:
            if name in s:
                return s
        return self.sections[-1]

    def nested(self, name: str) -> _Layers:
        return _Layers(*(s.section(name) for s in self.sections))


@dataclass(frozen=True, slots=True)
class _Backend:
    """What a route's settings depend on in the detector's: a confirmer, the task priors."""

    confirmer: bool
    task_priors: Mapping[str, float] | None  # each task's calibration prior (None: balanced)


def _resolve_route(
    decision: Section | None,
    g: Section,
    mode_defaults: Mapping[str, Mapping[str, Any]],
    models: frozenset[str],
    backend: _Backend,
) -> RouteSettings:
    layers = _Layers(decision, g) if decision is not None else _Layers(g)
    if decision is not None:
        decision.declare(*_GENERIC_KEYS)  # the mode checks the rest of the keys
    if decision is not None:
        mode = decision.get("mode", g.get("default_mode", "lightweight"))
        mode_key = decision.key("mode") if "mode" in decision else g.key("default_mode")
    else:
        mode = g.get("default_mode", "lightweight")
        mode_key = g.key("default_mode")
    if mode not in registry.mode_names():
        raise ConfigError(mode_key, f"unknown mode {mode!r} (expected one of {', '.join(registry.mode_names())})")

    def one(name: str) -> Section:
        return layers.pick(name)

    threshold = parse_threshold(one("threshold"))
    actions = parse_actions(one("actions"))
    warning_template = one("warning_template").string("warning_template", DEFAULT_WARNING)
    position: WarningPosition = one("warning_position").choice("warning_position", "prepend", ("prepend", "append"))
    fail_policy: FailPolicy = one("fail_policy").choice("fail_policy", "open", ("open", "closed"))
    streaming = resolve_streaming(one("streaming"), mode, _mode_module(mode, mode_key).REWRITES, actions)
    spans_header = one("spans_request_header").string("spans_request_header", "x-truthlens-include-spans")
    max_body = one("max_body_bytes").integer("max_body_bytes", 8 * 1024 * 1024, lo=1)
    confirm = one("confirm").boolean("confirm", False)
    if confirm and not backend.confirmer:
        raise ConfigError(one("confirm").key("confirm"), "needs detector.confirm (the model that confirms or clears "
                                                         "the detector's spans); add it or remove this key")

    budgets = layers.nested("budgets")
    for s in budgets.sections:
        s.allow("detection_ms", "total_ms")
    detection_s = budgets.pick("detection_ms").number("detection_ms", 5000, positive=True) / 1000
    total_s = budgets.pick("total_ms").number("total_ms", 60_000, positive=True) / 1000
    if detection_s > total_s:
        raise ConfigError(budgets.pick("detection_ms").key("detection_ms"), "must not exceed budgets.total_ms")

    ctx = layers.nested("context")
    for s in ctx.sections:
        s.allow("extension_field", "tool_messages", "system_messages", "templates")
    extension_field = ctx.pick("extension_field").optional_string("extension_field", "truthlens_context")
    api = next((e.name for e in endpoints.ALL if extension_field in e.request_keys), None)
    if api is not None:
        raise ConfigError(ctx.pick("extension_field").key("extension_field"),
                          f"{extension_field!r} is a field of the {api} API's request: the gateway removes the "
                          "extension field from every request, so the upstream would never get it; name a "
                          "field of your own (the default: truthlens_context)")
    context = ContextSettings(
        extension_field=extension_field,
        tool_messages=ctx.pick("tool_messages").boolean("tool_messages", True),
        system_messages=ctx.pick("system_messages").boolean("system_messages", False),
        templates=parse_templates(ctx.pick("templates")),
    )

    ev = layers.nested("evidence")
    for s in ev.sections:
        s.allow("enabled", "min_gate", "max_passages", "mode")
    evidence: EvidenceSettings | None = None
    if ev.pick("enabled").boolean("enabled", False):
        # Imported only when a route gates evidence: the gating module brings numpy.
        from truthlens.evidence.gating import EvidenceSettings

        evidence = EvidenceSettings(
            enabled=True,
            min_gate=ev.pick("min_gate").number("min_gate", 0.5, lo=0.0, hi=1.0),
            max_passages=ev.pick("max_passages").optional_integer("max_passages", lo=1),
            mode=ev.pick("mode").choice("mode", "drop", ("drop", "rank")),
        )

    # The mode's own keys: the global hallucination.<mode> section, overridden per decision.
    if decision is not None:
        own = {k: v for k, v in decision.raw.items() if k not in _GENERIC_KEYS}
        options = _parse_options(mode, {**mode_defaults.get(mode, {}), **own}, decision.path, models)
    else:
        section = g.section(mode)
        options = _parse_options(mode, mode_defaults.get(mode, {}), section.path, models)

    return RouteSettings(
        mode=mode,
        threshold=threshold.for_task(None),
        threshold_basis=threshold.basis,
        task_thresholds=MappingProxyType(threshold.per_task(backend.task_priors)),
        actions=actions,
        warning_template=warning_template,
        warning_position=position,
        fail_policy=fail_policy,
        streaming=streaming,
        budgets=Budgets(detection_s=detection_s, total_s=total_s),
        context=context,
        spans_request_header=spans_header.lower(),
        max_body_bytes=max_body,
        options=options,
        evidence=evidence,
        enabled=one("enabled").boolean("enabled", True),
        no_context=one("no_context").choice("no_context", "skip", NO_CONTEXT_POLICIES),
        confirm=confirm,
        require_disclaimer=one("require_disclaimer").boolean("require_disclaimer", False),
    )


def _parse_decisions(
    raw: Any, g: Section, mode_defaults: Mapping[str, Mapping[str, Any]], models: frozenset[str], backend: _Backend,
    vocabulary: Vocabulary,
) -> tuple[Decision, ...]:
    if not isinstance(raw, list):
        raise ConfigError("decisions", "must be a list")
    decisions: list[Decision] = []
    names: set[str] = set()
    for i, item in enumerate(raw):
        d = Section(item, f"decisions[{i}]")
        d.allow("name", "description", "priority", "rules", "plugins", "modelRefs")
        _model_refs(d)
        name = d.string("name")
        if name in names:
            raise ConfigError(d.key("name"), f"duplicate decision name {name!r}")
        names.add(name)
        description = d.get("description", "", schema={"type": "string"})
        if not isinstance(description, str):
            raise ConfigError(d.key("description"), "must be a string")
        decisions.append(
            Decision(
                name=name,
                priority=d.integer("priority", 0),
                rules=compile_rules(d.get("rules", schema={"$ref": "#/$defs/rule"}), d.key("rules"), vocabulary),
                route=_decision_route(d, g, mode_defaults, models, backend),
                description=description,
            )
        )
    # sorted() is stable: equal priorities keep file order.
    return tuple(sorted(decisions, key=lambda x: -x.priority))


def _model_refs(d: Section) -> None:
    """``modelRefs`` (the semantic router's: the models a decision routes to) is validated for its
    shape and otherwise not read: the gateway checks answers, it does not choose the model."""
    refs = d.get("modelRefs", [], schema={"type": "array", "items": {
        "type": "object", "required": ["model"], "properties": {"model": {"type": "string"}}},
        "description": "the semantic router's models for this decision; validated, not used by TruthLens"})
    if not isinstance(refs, list):
        raise ConfigError(d.key("modelRefs"), "must be a list of {model: name}")
    for j, ref in enumerate(refs):
        if not isinstance(ref, dict) or not isinstance(ref.get("model"), str) or not ref["model"].strip():
            raise ConfigError(d.key(f"modelRefs[{j}]"), "must be a mapping with a model name ({model: name})")


def _decision_route(
    d: Section, g: Section, mode_defaults: Mapping[str, Mapping[str, Any]], models: frozenset[str], backend: _Backend
) -> RouteSettings | None:
    plugins = d.get("plugins", [], schema={"type": "array", "maxItems": 1})
    if not isinstance(plugins, list):
        raise ConfigError(d.key("plugins"), "must be a list")
    if len(plugins) > 1:
        raise ConfigError(d.key("plugins"), "a decision takes one hallucination plugin")
    for j, item in enumerate(plugins):
        p = Section(item, d.key(f"plugins[{j}]"))
        p.allow("type", "configuration")
        if p.get("type", schema={"const": "hallucination"}) != "hallucination":
            raise ConfigError(p.key("type"), f"unknown plugin type {p.get('type')!r} (expected hallucination)")
        # A disabled route's settings are still validated: a typo must not wait for the day
        # someone enables it.
        policy = _resolve_route(p.section("configuration"), g, mode_defaults, models, backend)
        return policy if policy.enabled else None
    return None
