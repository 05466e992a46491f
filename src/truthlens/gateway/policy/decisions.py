"""Request facts → the matching decision. Pure: no I/O; rules are compiled once at load.

A rule is an AND / OR / NOT tree whose leaves test a header, the path, the requested model,
keywords in the user's text (listed, or a named set of the config's ``keywords``) or the
user's text's domain (decided before matching by :mod:`truthlens.gateway.policy.domains`;
:class:`RequestFacts` carries its name). :func:`compile_rules` turns the YAML mapping into the tree
(raising :class:`truthlens.options.ConfigError` naming the key); :func:`match` walks the config's
decisions, highest priority first.

Paths are compared as :func:`truthlens.gateway.core.paths.normal_path` reads them (no query string
or ``;params``, lower case, no trailing slash). A header that came more than once holds a value
or ``contains`` test when one of its values does, as Envoy's route matchers read it (never the
values joined with ``,``, which no client sent).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from truthlens.gateway.core import re2_syntax
from truthlens.gateway.core.paths import lower_ascii, normal_path, normal_prefix
from truthlens.options import ConfigError, Section

CONDITION_TYPES = ("domain", "header", "keyword", "model", "path")
OPERATORS = ("AND", "OR", "NOT")

HeaderTest = Literal["value", "contains", "present"]
PathTest = Literal["prefix", "exact", "regex"]
HEADER_TESTS: tuple[HeaderTest, ...] = ("value", "contains", "present")
PATH_TESTS: tuple[PathTest, ...] = ("prefix", "exact", "regex")


@dataclass(frozen=True, slots=True)
class RequestFacts:
    path: str  # the request's :path as sent (path rules read it through normal_path)
    method: str
    headers: Mapping[str, str]  # lower-case names; a repeated header's values joined with ","
    model: str = ""
    user_text: str = ""
    # Each value of a header that came more than once (lower-case names); header rules test
    # these one by one instead of the joined value.
    repeated: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    domain: str | None = None  # the user's text's domain (None: none, or not classified)

    def header_values(self, name: str) -> tuple[str, ...]:
        """The values of header ``name`` as the client sent them (empty: absent)."""
        values = self.repeated.get(name)
        if values is not None:
            return values
        value = self.headers.get(name)
        return () if value is None else (value,)


class Rule(Protocol):
    def matches(self, facts: RequestFacts) -> bool: ...

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        """Whether the rule holds on what the headers tell; None: it depends on the body
        (the model or the user's text)."""
        ...


class _NeedsBody:
    """The type of :data:`NEEDS_BODY`."""

    def __repr__(self) -> str:
        return "NEEDS_BODY"


NEEDS_BODY = _NeedsBody()


@dataclass(frozen=True, slots=True)
class Always:
    def matches(self, facts: RequestFacts) -> bool:
        return True

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        return True


@dataclass(frozen=True, slots=True)
class AllOf:
    rules: tuple[Rule, ...]

    def matches(self, facts: RequestFacts) -> bool:
        return all(r.matches(facts) for r in self.rules)

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        results = [r.matches_without_body(facts) for r in self.rules]
        if False in results:
            return False
        return None if None in results else True


@dataclass(frozen=True, slots=True)
class AnyOf:
    rules: tuple[Rule, ...]

    def matches(self, facts: RequestFacts) -> bool:
        return any(r.matches(facts) for r in self.rules)

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        results = [r.matches_without_body(facts) for r in self.rules]
        if True in results:
            return True
        return None if None in results else False


@dataclass(frozen=True, slots=True)
class Not:
    rule: Rule

    def matches(self, facts: RequestFacts) -> bool:
        return not self.rule.matches(facts)

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        inner = self.rule.matches_without_body(facts)
        return None if inner is None else not inner


@dataclass(frozen=True, slots=True)
class HeaderRule:
    name: str  # lower-case
    test: HeaderTest
    operand: str | bool

    def matches(self, facts: RequestFacts) -> bool:
        values = facts.header_values(self.name)
        if self.test == "present":
            return bool(values) == self.operand
        if self.test == "value":
            return any(value == self.operand for value in values)
        return any(str(self.operand) in value for value in values)

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        return self.matches(facts)


@dataclass(frozen=True, slots=True)
class PathRule:
    test: PathTest
    operand: str  # prefix / exact: spelt as normal_path spells paths; regex: as written
    pattern: re2_syntax.PathPattern | None = None  # regex: run by RE2, in time linear in the path

    def matches(self, facts: RequestFacts) -> bool:
        path = normal_path(facts.path)
        if self.test == "prefix":
            return path.startswith(self.operand)
        if self.test == "exact":
            return path == self.operand
        assert self.pattern is not None
        # The path's bytes as sent (a header byte that is not UTF-8 is kept as a lone surrogate).
        return self.pattern.search(path.encode("utf-8", "surrogateescape")) is not None

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        return self.matches(facts)


@dataclass(frozen=True, slots=True)
class ModelRule:
    names: frozenset[str]

    def matches(self, facts: RequestFacts) -> bool:
        return facts.model in self.names

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        return None


@dataclass(frozen=True, slots=True)
class KeywordRule:
    keywords: tuple[str, ...]  # lower-cased unless case-sensitive
    pattern: re.Pattern[str]

    def matches(self, facts: RequestFacts) -> bool:
        return self.pattern.search(facts.user_text) is not None

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        return None


@dataclass(frozen=True, slots=True)
class DomainRule:
    name: str

    def matches(self, facts: RequestFacts) -> bool:
        return facts.domain == self.name

    def matches_without_body(self, facts: RequestFacts) -> bool | None:
        return None


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The names a rule may refer to, defined elsewhere in the config: its domains and its
    named keyword sets."""

    domains: frozenset[str] = frozenset()
    keyword_sets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def uses_domains(rule: Rule) -> bool:
    """Whether any leaf of ``rule`` is a domain condition (only then is a request classified)."""
    if isinstance(rule, DomainRule):
        return True
    if isinstance(rule, Not):
        return uses_domains(rule.rule)
    if isinstance(rule, (AllOf, AnyOf)):
        return any(uses_domains(r) for r in rule.rules)
    return False


class Ruled(Protocol):
    """A decision as the matcher reads it: its compiled rules (the config's ``Decision``)."""

    @property
    def rules(self) -> Rule: ...


D_co = TypeVar("D_co", bound=Ruled, covariant=True)


class Decisions(Protocol[D_co]):
    """What the matcher reads of a config: its decisions by priority (the config's ``Config``).
    The rules never import the config they are part of."""

    @property
    def decisions(self) -> tuple[D_co, ...]: ...


D = TypeVar("D", bound=Ruled)


def match_before_body(config: Decisions[D], facts: RequestFacts) -> D | None | _NeedsBody:
    """:func:`match` on what the request headers tell: the decision, None when none can match
    whatever the body says, or :data:`NEEDS_BODY` when a rule on the model or the user's text
    decides (the gateway then decodes the body; a request no route checks is never parsed)."""
    for decision in config.decisions:
        holds = decision.rules.matches_without_body(facts)
        if holds is None:
            return NEEDS_BODY
        if holds:
            return decision
    return None


def match(config: Decisions[D], facts: RequestFacts) -> D | None:
    """The first decision (by priority, then file order) whose rules hold, or None."""
    for decision in config.decisions:
        if decision.rules.matches(facts):
            return decision
    return None


# ---------------------------------------------------------------------------- compilation


def compile_rules(raw: Any, path: str, vocabulary: Vocabulary | None = None) -> Rule:
    """A ``rules`` mapping (or None: match everything) → a rule tree; a domain or keyword set
    the ``vocabulary`` does not define is an error naming the condition."""
    if raw is None:
        return Always()
    return _compile_node(raw, path, vocabulary or Vocabulary())


def _compile_node(raw: Any, path: str, vocabulary: Vocabulary) -> Rule:
    node = Section(raw, path)
    if "operator" not in node and "type" in node:
        return _compile_leaf(node, vocabulary)
    node.allow("operator", "conditions")
    node.require("operator", "conditions")
    # Any letter case, as the check below: an ECMA regex has no case-insensitive flag of its own.
    any_case = "|".join("".join(f"[{c}{c.lower()}]" for c in o) for o in OPERATORS)
    operator = node.get("operator", schema={"type": "string", "pattern": f"^({any_case})$"})
    if not isinstance(operator, str) or operator.upper() not in OPERATORS:
        raise ConfigError(node.key("operator"),
                          f"unknown operator {operator!r} (expected one of {', '.join(OPERATORS)})")
    operator = operator.upper()
    conditions = node.get("conditions", schema={"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/rule"}})
    if not isinstance(conditions, list) or not conditions:
        raise ConfigError(node.key("conditions"), "must be a non-empty list")
    rules = tuple(_compile_node(c, f"{path}.conditions[{i}]", vocabulary) for i, c in enumerate(conditions))
    if operator == "NOT":
        if len(rules) != 1:
            raise ConfigError(node.key("conditions"), f"NOT takes exactly one condition, got {len(rules)}")
        return Not(rules[0])
    if len(rules) == 1:
        return rules[0]
    return AllOf(rules) if operator == "AND" else AnyOf(rules)


def _compile_leaf(leaf: Section, vocabulary: Vocabulary) -> Rule:
    kind = leaf.get("type", schema={"enum": list(CONDITION_TYPES)})
    if kind not in CONDITION_TYPES:
        raise ConfigError(
            leaf.key("type"), f"unknown condition type {kind!r} (expected one of {', '.join(CONDITION_TYPES)})"
        )
    if kind == "header":
        leaf.allow("type", "name", *HEADER_TESTS)
        leaf.require("name")
        name = leaf.string("name")
        test, _ = leaf.one_of(HEADER_TESTS)
        operand: str | bool
        if test == "present":
            operand = leaf.boolean("present", False)
        else:
            operand = leaf.string(test, allow_empty=test == "value")
        return HeaderRule(name=name.lower(), test=test, operand=operand)
    if kind == "path":
        leaf.allow("type", *PATH_TESTS)
        path_test, _ = leaf.one_of(PATH_TESTS)
        text = leaf.string(path_test)
        if path_test != "regex":
            return PathRule(test=path_test, operand=_path_operand(path_test, text))
        _regex(text, leaf.key("regex"), 0)  # Python's parser reads it too (the letter check, envoy-routes)
        if re2_syntax.has_upper_case_literal(text):
            raise ConfigError(leaf.key("regex"), "path conditions compare the lower-cased path: write the "
                              "pattern's letters in lower case")
        try:
            engine = re2_syntax.compile_path_regex(text)
        except ValueError as exc:
            raise ConfigError(leaf.key("regex"), f"not valid RE2 (path rules run in RE2, in time linear in the "
                              f"path; no back-references or look-arounds): {exc}") from None
        return PathRule(test=path_test, operand=text, pattern=engine)
    if kind == "model":
        leaf.allow("type", "name", "any")
        model_test, _ = leaf.one_of(("name", "any"))
        names = [leaf.string("name")] if model_test == "name" else leaf.string_list("any")
        return ModelRule(names=frozenset(names))
    if kind == "domain":
        leaf.allow("type", "name")
        leaf.require("name")
        domain = leaf.string("name")
        if domain not in vocabulary.domains:
            raise ConfigError(leaf.key("name"), f"unknown domain {domain!r} (defined: "
                              f"{', '.join(sorted(vocabulary.domains))}; add one under domains.sets with examples)")
        return DomainRule(domain)
    leaf.allow("type", "any", "name", "case_sensitive")
    keyword_test, _ = leaf.one_of(("any", "name"))
    if keyword_test == "any":
        keywords = leaf.string_list("any")
    else:
        set_name = leaf.string("name")
        if set_name not in vocabulary.keyword_sets:
            known = ", ".join(sorted(vocabulary.keyword_sets)) or "none"
            raise ConfigError(leaf.key("name"), f"unknown keyword set {set_name!r} (defined: {known}; "
                                                "list its words under keywords.<name>)")
        keywords = list(vocabulary.keyword_sets[set_name])
    case_sensitive = leaf.boolean("case_sensitive", False)
    if not case_sensitive:
        keywords = [k.lower() for k in keywords]
    # Whole words only ("dose" must not fire on "dosed"); look-arounds instead of \b so
    # keywords that start or end with punctuation ("c++") still match.
    alternation = "|".join(re.escape(k) for k in sorted(set(keywords), key=len, reverse=True))
    pattern = _regex(rf"(?<!\w)(?:{alternation})(?!\w)", leaf.key("any"), 0 if case_sensitive else re.IGNORECASE)
    return KeywordRule(keywords=tuple(keywords), pattern=pattern)


def _path_operand(test: PathTest, text: str) -> str:
    """A prefix or exact operand spelt as the paths it meets; one holding a query string or a
    fragment stays as written (the path compared has none, so it never holds)."""
    if "?" in text or "#" in text:
        return lower_ascii(text)
    return normal_prefix(text) if test == "prefix" else normal_path(text)


def _regex(pattern: str, path: str, flags: int) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ConfigError(path, f"invalid regular expression: {exc}") from None
