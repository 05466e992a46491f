"""Request facts → the matching decision. Pure: no I/O; rules are compiled once at load.

A rule is an AND / OR / NOT tree whose leaves test a header, the path, the requested model
or keywords in the user's text. :func:`compile_rules` turns the YAML mapping into the tree
(raising :class:`truthlens.modes.base.ConfigError` naming the key); :func:`match` walks the config's
decisions, highest priority first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from truthlens.modes.base import ConfigError

if TYPE_CHECKING:
    from truthlens.gateway.config import Config, Decision

CONDITION_TYPES = ("header", "keyword", "model", "path")
OPERATORS = ("AND", "OR", "NOT")


@dataclass(frozen=True, slots=True)
class RequestFacts:
    path: str  # the request's :path (a query string is ignored by path rules)
    method: str
    headers: Mapping[str, str]  # lower-case names
    model: str = ""
    user_text: str = ""


class Rule(Protocol):
    def matches(self, facts: RequestFacts) -> bool: ...


@dataclass(frozen=True, slots=True)
class Always:
    def matches(self, facts: RequestFacts) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class AllOf:
    rules: tuple[Rule, ...]

    def matches(self, facts: RequestFacts) -> bool:
        return all(r.matches(facts) for r in self.rules)


@dataclass(frozen=True, slots=True)
class AnyOf:
    rules: tuple[Rule, ...]

    def matches(self, facts: RequestFacts) -> bool:
        return any(r.matches(facts) for r in self.rules)


@dataclass(frozen=True, slots=True)
class Not:
    rule: Rule

    def matches(self, facts: RequestFacts) -> bool:
        return not self.rule.matches(facts)


@dataclass(frozen=True, slots=True)
class HeaderRule:
    name: str  # lower-case
    test: Literal["value", "contains", "present"]
    operand: str | bool

    def matches(self, facts: RequestFacts) -> bool:
        value = facts.headers.get(self.name)
        if self.test == "present":
            return (value is not None) == self.operand
        if value is None:
            return False
        if self.test == "value":
            return value == self.operand
        return str(self.operand) in value


@dataclass(frozen=True, slots=True)
class PathRule:
    test: Literal["prefix", "exact", "regex"]
    operand: str
    pattern: re.Pattern[str] | None = None

    def matches(self, facts: RequestFacts) -> bool:
        path = facts.path.split("?", 1)[0]
        if self.test == "prefix":
            return path.startswith(self.operand)
        if self.test == "exact":
            return path == self.operand
        assert self.pattern is not None
        return self.pattern.search(path) is not None


@dataclass(frozen=True, slots=True)
class ModelRule:
    names: frozenset[str]

    def matches(self, facts: RequestFacts) -> bool:
        return facts.model in self.names


@dataclass(frozen=True, slots=True)
class KeywordRule:
    keywords: tuple[str, ...]  # lower-cased unless case-sensitive
    pattern: re.Pattern[str]

    def matches(self, facts: RequestFacts) -> bool:
        return self.pattern.search(facts.user_text) is not None


def match(config: Config, facts: RequestFacts) -> Decision | None:
    """The first decision (by priority, then file order) whose rules hold, or None."""
    for decision in config.decisions:
        if decision.rules.matches(facts):
            return decision
    return None


# ---------------------------------------------------------------------------- compilation


def compile_rules(raw: Any, path: str) -> Rule:
    """A ``rules`` mapping (or None: match everything) → a rule tree."""
    if raw is None:
        return Always()
    return _compile_node(raw, path)


def _compile_node(raw: Any, path: str) -> Rule:
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"must be a mapping, got {type(raw).__name__}")
    if "operator" not in raw and "type" in raw:
        return _compile_leaf(raw, path)
    _check_keys(raw, path, required=("operator", "conditions"), optional=())
    operator = raw["operator"]
    if not isinstance(operator, str) or operator.upper() not in OPERATORS:
        raise ConfigError(f"{path}.operator", f"unknown operator {operator!r} (expected one of {', '.join(OPERATORS)})")
    operator = operator.upper()
    conditions = raw["conditions"]
    if not isinstance(conditions, list) or not conditions:
        raise ConfigError(f"{path}.conditions", "must be a non-empty list")
    rules = tuple(_compile_node(c, f"{path}.conditions[{i}]") for i, c in enumerate(conditions))
    if operator == "NOT":
        if len(rules) != 1:
            raise ConfigError(f"{path}.conditions", f"NOT takes exactly one condition, got {len(rules)}")
        return Not(rules[0])
    if len(rules) == 1:
        return rules[0]
    return AllOf(rules) if operator == "AND" else AnyOf(rules)


def _compile_leaf(raw: Mapping[str, Any], path: str) -> Rule:
    kind = raw["type"]
    if kind not in CONDITION_TYPES:
        raise ConfigError(
            f"{path}.type", f"unknown condition type {kind!r} (expected one of {', '.join(CONDITION_TYPES)})"
        )
    if kind == "header":
        _check_keys(raw, path, required=("type", "name"), optional=("value", "contains", "present"))
        name = _string(raw["name"], f"{path}.name")
        test, operand = _one_of(raw, path, ("value", "contains", "present"))
        if test == "present":
            if not isinstance(operand, bool):
                raise ConfigError(f"{path}.present", "must be true or false")
        else:
            operand = _string(operand, f"{path}.{test}", allow_empty=test == "value")
        return HeaderRule(name=name.lower(), test=test, operand=operand)  # type: ignore[arg-type]
    if kind == "path":
        _check_keys(raw, path, required=("type",), optional=("prefix", "exact", "regex"))
        test, operand = _one_of(raw, path, ("prefix", "exact", "regex"))
        operand = _string(operand, f"{path}.{test}")
        pattern = None
        if test == "regex":
            pattern = _regex(operand, f"{path}.regex", 0)
        return PathRule(test=test, operand=operand, pattern=pattern)  # type: ignore[arg-type]
    if kind == "model":
        _check_keys(raw, path, required=("type",), optional=("name", "any"))
        test, operand = _one_of(raw, path, ("name", "any"))
        names = [operand] if test == "name" else _string_list(operand, f"{path}.any")
        return ModelRule(names=frozenset(_string(n, f"{path}.{test}") for n in names))
    _check_keys(raw, path, required=("type", "any"), optional=("case_sensitive",))
    keywords = _string_list(raw["any"], f"{path}.any")
    case_sensitive = raw.get("case_sensitive", False)
    if not isinstance(case_sensitive, bool):
        raise ConfigError(f"{path}.case_sensitive", "must be true or false")
    if not case_sensitive:
        keywords = [k.lower() for k in keywords]
    # Whole words only ("dose" must not fire on "dosed"); look-arounds instead of \b so
    # keywords that start or end with punctuation ("c++") still match.
    alternation = "|".join(re.escape(k) for k in sorted(set(keywords), key=len, reverse=True))
    pattern = _regex(rf"(?<!\w)(?:{alternation})(?!\w)", f"{path}.any", 0 if case_sensitive else re.IGNORECASE)
    return KeywordRule(keywords=tuple(keywords), pattern=pattern)


def _check_keys(raw: Mapping[str, Any], path: str, *, required: Sequence[str], optional: Sequence[str]) -> None:
    allowed = (*required, *optional)
    for key in raw:
        if key not in allowed:
            raise ConfigError(f"{path}.{key}", f"unknown key (expected one of {', '.join(allowed)})")
    for key in required:
        if key not in raw:
            raise ConfigError(f"{path}.{key}", "is required")


def _one_of(raw: Mapping[str, Any], path: str, keys: Sequence[str]) -> tuple[str, Any]:
    present = [k for k in keys if k in raw]
    if len(present) != 1:
        raise ConfigError(path, f"needs exactly one of {', '.join(keys)} (got {', '.join(present) or 'none'})")
    return present[0], raw[present[0]]


def _string(value: Any, path: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_empty):
        raise ConfigError(path, f"must be a non-empty string, got {value!r}")
    return value


def _string_list(value: Any, path: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ConfigError(path, "must be a non-empty list of strings")
    return [_string(v, f"{path}[{i}]") for i, v in enumerate(value)]


def _regex(pattern: str, path: str, flags: int) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ConfigError(path, f"invalid regular expression: {exc}") from None
