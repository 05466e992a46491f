"""The configuration's JSON Schema and its Markdown reference, built from what validation reads.

Nothing here lists a key. :func:`build` runs the validator (:func:`~truthlens.gateway.policy.config.parse_config`)
over probe documents (the shipped configs and the examples, plus one that reaches the branches
they leave out) with a :class:`~truthlens.options.SchemaRecorder` active: every ``allow`` names a
section's keys and every typed reader records its key's type, default, range or choices. A key
added to a reader appears in ``truthlens schema`` with no other edit; ``docs/truthlens-config.schema.json``
and ``docs/configuration-reference.md`` are its committed output (a test keeps them equal).

The schema is what editors check while typing (unknown keys, types, ranges, choices). Some checks
stay the validator's alone (a model name the ``models`` section can reach, a regular expression
that compiles, a budget that fits in another): ``truthlens check-config`` is the authority.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from truthlens.gateway.policy.config import parse_config
from truthlens.modes import registry
from truthlens.options import SchemaRecorder

SCHEMA_ID = "truthlens-config.schema.json"
REGENERATE = ("truthlens schema > docs/truthlens-config.schema.json && "
              "truthlens schema --markdown > docs/configuration-reference.md")
ROUTE = "decisions[].plugins[].configuration"  # a route's settings; its defaults live in `hallucination`
GLOBAL = "hallucination"
RULES = "decisions[].rules"
RULE_REF = {"$ref": "#/$defs/rule"}

# Branches the shipped configs leave unread; each document is a valid config.
_MODELS = {"default": {"base_url": "http://127.0.0.1:8000/v1"}, "checker": {"base_url": "http://127.0.0.1:8001/v1"}}
_PROBES: tuple[dict[str, Any], ...] = (
    {
        "version": 1,
        "gateway": {"max_streams": 64},
        "models": _MODELS,
        "detector": {"confirm": {"model": "checker"}, "token_threshold": 0.5, "aggregation": "noisy_or",
                     "min_span_length": 1, "role_checks": True},
        "hallucination": {
            "evidence": {"enabled": True, "max_passages": 4},
            "premium": {"verification_models": ["checker"]},
            "auto": {"premium": {"verification_models": ["checker"]}},
            **{mode: {} for mode in ("standard", "acr", "lightweight")},
        },
        "decisions": [
            {"name": "rules", "description": "every kind of rule", "priority": 1, "rules": {
                "operator": "OR", "conditions": [
                    {"type": "header", "name": "x-a", "value": "1"},
                    {"type": "header", "name": "x-b", "contains": "2"},
                    {"type": "header", "name": "x-c", "present": True},
                    {"type": "path", "exact": "/v1/chat/completions"},
                    {"type": "path", "regex": "^/v1/.*"},
                    {"type": "model", "any": ["m"]},
                    {"type": "model", "name": "m"},
                    {"operator": "NOT", "conditions": [{"type": "keyword", "any": ["x"], "case_sensitive": True}]},
                ]},
             "plugins": [{"type": "hallucination", "configuration": {"mode": "lightweight", "confirm": True}}]},
            {"name": "domains", "modelRefs": [{"model": "m"}],
             "rules": {"operator": "OR", "conditions": [{"type": "domain", "name": "ops"},
                                                        {"type": "keyword", "name": "meds"}]},
             "plugins": [{"type": "hallucination", "configuration": {
                 "threshold": {"miss_cost": 10, "prior": 0.1, "preset": "medical"}, "require_disclaimer": True,
                 "mode": "adaptive", "arms": ["lightweight", "standard"], "store": "sqlite:adaptive.sqlite3",
                 "feedback_window_s": 600, "price_per_second": 0.01, "price_per_model_call": 0.01, "memory": 1000,
                 "standard": {}}}]},
        ],
        "domains": {"min_similarity": 0.2, "sets": {"ops": {"examples": ["Restart the staging cluster"],
                                                              "replace": False}}},
        "keywords": {"meds": ["dosage"]},
    },
)


def build() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a config file."""
    return _Builder(record()).schema()


def record() -> SchemaRecorder:
    """Validate every probe document with a recorder active; what the readers read."""
    recorder = SchemaRecorder()
    with recorder.recording():
        for source, doc, base in _probe_documents():
            parse_config(doc, base_dir=base, source=source)
    return recorder


def _probe_documents() -> Iterator[tuple[str, Any, Path]]:
    from truthlens.starter import CONFIG, EXAMPLES_DIR

    for path in (CONFIG, *sorted(EXAMPLES_DIR.glob("*.yaml"))):
        yield str(path), yaml.safe_load(path.read_text(encoding="utf-8")), path.parent
    for i, doc in enumerate(_PROBES):
        yield f"probe {i}", doc, Path(".")


class _Builder:
    def __init__(self, recorder: SchemaRecorder) -> None:
        self.rec = recorder
        self.modes = registry.mode_names()
        self.paths = {p for p in (*recorder.keys, *recorder.allowed, *recorder.maps) if not p.startswith(RULES)}
        self.prefixes = {p[:i] for p in self.paths for i in range(len(p) + 1) if i == len(p) or p[i] in ".["}

    def schema(self) -> dict[str, Any]:
        root = self.node("")
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": SCHEMA_ID,
            "title": "TruthLens ExtProc configuration (config.yaml)",
            "description": f"Generated by `truthlens schema` from the validator; `truthlens check-config` is the "
                           f"authority. Regenerate: {REGENERATE}",
            **root,
            "$defs": {"rule": self.rule()},
        }

    def node(self, path: str) -> dict[str, Any]:
        """The object schema of the section at ``path``."""
        if path == ROUTE:
            return self.route()
        names = self._names(path)
        out: dict[str, Any] = {"type": "object", "properties": {n: self.prop(path, n) for n in names}}
        if path in self.rec.allowed:
            out["additionalProperties"] = False
        required = sorted(self.rec.required.get(path, set()) & set(names))
        if required:
            out["required"] = required
        return out

    def route(self) -> dict[str, Any]:
        """A route's configuration: the generic keys (typed as in ``hallucination``) and the keys of
        every mode; a route naming its mode takes only that mode's."""
        generic = self._names(ROUTE)
        props = {n: self.prop(GLOBAL if n in self._names(GLOBAL) else ROUTE, n) for n in generic}
        props["mode"] = {"enum": list(self.modes), "description": "default: hallucination.default_mode"}
        per_mode = {m: self._names(f"{GLOBAL}.{m}") for m in self.modes}
        for names in per_mode.values():
            for name in names:
                if name in props:
                    continue
                owners = [m for m, ns in per_mode.items() if name in ns]
                fragments = [self.prop(f"{GLOBAL}.{m}", name) for m in owners]
                unique = [f for i, f in enumerate(fragments) if f not in fragments[:i]]
                props[name] = unique[0] if len(unique) == 1 else {"anyOf": unique}
                props[name] = {**props[name], "description": _join(props[name].get("description"),
                                                                    f"mode {', '.join(owners)}")}
        return {
            "type": "object",
            "properties": props,
            "additionalProperties": False,
            "allOf": [
                {"if": {"properties": {"mode": {"const": m}}, "required": ["mode"]},
                 "then": {"propertyNames": {"enum": [*generic, "mode", *names]}}}
                for m, names in per_mode.items()
            ],
        }

    def rule(self) -> dict[str, Any]:
        """A rule: a leaf condition or an operator over conditions (nested to any depth)."""
        names: list[str] = []
        fragments: dict[str, dict[str, Any]] = {}
        for path in (*self.rec.allowed, *self.rec.keys):
            if path.startswith(RULES):
                names.extend(n for n in self.rec.allowed.get(path, ()) if n not in names)
                for name in self.rec.keys.get(path, {}):
                    fragments.setdefault(name, self.rec.fragment(path, name))
                    if name not in names:
                        names.append(name)
        properties = {n: fragments.get(n, {}) for n in names}
        if "conditions" in properties:
            # A group's conditions are rules too: a typo'd key in one (prefx) fails here as in check-config.
            properties["conditions"] = {"type": "array", "items": RULE_REF}
        return {"type": "object", "properties": properties, "additionalProperties": False}

    def prop(self, path: str, name: str) -> dict[str, Any]:
        fragment = self.rec.fragment(path, name)
        child = f"{path}.{name}".lstrip(".")
        if f"{child}[]" in self.prefixes:
            return {**fragment, "type": "array", "items": self.node(f"{child}[]")}
        if child in self.rec.maps:
            return {**fragment, "type": "object", "additionalProperties": self.node(f"{child}.*")}
        if child in self.prefixes and child != RULES:
            return {**fragment, **self.node(child)}
        return fragment

    def _names(self, path: str) -> list[str]:
        names = list(self.rec.allowed.get(path, ()))
        names += [n for n in self.rec.keys.get(path, {}) if n not in names]
        return names


def _join(*parts: str | None) -> str:
    return "; ".join(p for p in parts if p)


# ------------------------------------------------------------------------------- Markdown


def markdown(schema: Mapping[str, Any]) -> str:
    """The reference page: one table per section, in the order validation reads them."""
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `truthlens schema --markdown` from the validator: do not edit by hand. -->",
        "",
        "Every key of `config.yaml`, section by section: its type, default and allowed values, as",
        "`truthlens check-config` validates them. An unknown key is an error everywhere. Editors that",
        "read a `# yaml-language-server: $schema=...` first line (VS Code's YAML extension, for one)",
        f"complete and check keys while you type with the JSON Schema (`{SCHEMA_ID}`). Regenerate both",
        f"after changing a reader: `{REGENERATE}`.",
        "",
    ]
    for title, node in _sections("", schema):
        lines += [f"## `{title or '(top level)'}`", "", "| key | type | default | allowed |", "|---|---|---|---|"]
        required = set(node.get("required", ()))
        for name, prop in node["properties"].items():
            key = f"`{name}`" + (" (required)" if name in required else "")
            lines.append(f"| {key} | {_type(prop)} | {_default(prop)} | {_allowed(prop)} |")
        lines.append("")
    rule = schema["$defs"]["rule"]
    lines += ["## `rules` (a rule, nested to any depth)", "",
              "A leaf (`type` and its test) or a group (`operator` over `conditions`).", "",
              "| key | type | default | allowed |", "|---|---|---|---|"]
    lines += [f"| `{n}` | {_type(p)} | {_default(p)} | {_allowed(p)} |" for n, p in rule["properties"].items()]
    return "\n".join(lines) + "\n"


def _sections(path: str, node: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    yield path, node
    for name, prop in node.get("properties", {}).items():
        child = f"{path}.{name}".lstrip(".")
        for sub, suffix in ((prop, ""), (prop.get("items"), "[]"), (prop.get("additionalProperties"), ".<name>")):
            if isinstance(sub, Mapping) and sub.get("properties"):
                yield from _sections(child + suffix, sub)


def _type(prop: Mapping[str, Any]) -> str:
    if "$ref" in prop:
        return "rule"
    if "anyOf" in prop:
        return " or ".join(dict.fromkeys(_type(p) for p in prop["anyOf"]))
    if "const" in prop:
        return json.dumps(prop["const"])
    kind = prop.get("type", "enum" if "enum" in prop else "any")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and isinstance(prop.get("items"), Mapping) and "properties" not in prop["items"]:
        kinds = [f"list of {_type(prop['items'])}" if k == "array" else k for k in kinds]
    if "object" in kinds and prop.get("properties"):
        kinds = ["section" if k == "object" else k for k in kinds]
    return " or ".join(str(k) for k in kinds)


def _default(prop: Mapping[str, Any]) -> str:
    return f"`{json.dumps(prop['default'], ensure_ascii=False)}`" if "default" in prop else ""


def _allowed(prop: Mapping[str, Any]) -> str:
    parts = []
    if "enum" in prop:
        parts.append(", ".join(f"`{v}`" for v in prop["enum"]))
    if isinstance(prop.get("items"), Mapping) and "enum" in prop["items"]:
        parts.append(", ".join(f"`{v}`" for v in prop["items"]["enum"]))
    bounds = [(k, s) for k, s in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="))
              if k in prop]
    if bounds:
        parts.append(", ".join(f"{s} {prop[k]}" for k, s in bounds))
    if prop.get("pattern") == "^https?://[^/]":
        parts.append("http:// or https:// URL")
    if prop.get("description"):
        parts.append(str(prop["description"]))
    return "; ".join(parts).replace("|", "\\|")


def schema_json() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"
