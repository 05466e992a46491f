"""A config's decisions → Envoy routes that skip the processor for detection-off exchanges.

One job: ``truthlens envoy-routes`` turns the decisions of a validated config into the
``routes:`` of Envoy's virtual host, so that an exchange the processor would give a
detection-off decision never reaches the processor at all (``ExtProcPerRoute {disabled:
true}``): no ext_proc message, Envoy-alone cost. Every other exchange keeps its route through
the processor.

Exactness is the whole point. Envoy takes the first route that matches, the processor the first
decision (by priority) whose rules hold, so the decisions are emitted in the processor's order:
a detection-off decision as bypass routes, a checked one as plain routes (through the
processor) so that no request it would take reaches a later bypass route. A decision's routes
match exactly the requests its rules match; OR branches (after pushing NOT down to the
conditions) become one route each. Emission stops at the first decision Envoy cannot decide
exactly: a rule on the model or the user's text (the body decides), or a condition without an
exact Envoy equivalent. Every route after that point is the catch-all through the processor.

Condition → Envoy matcher (paths are read by one rule on both sides,
:func:`truthlens.gateway.core.paths.normal_path`: no query string or ``;params``, lower case, no
trailing slash; :mod:`truthlens.gateway.core.re2_syntax` folds that rule into each regex):

- path ``prefix`` / ``exact`` / ``regex`` → ``safe_regex`` (RE2, matched on the whole path less
  its query string) built from ``^prefix``, ``^exact$`` or the pattern, searched as the processor
  searches (``re.search``) — only the constructs both engines read alike (literals, classes of
  literals and ranges without ``/`` or ``;``, groups, alternation, repeats, ``^`` and ``$``;
  ASCII only); the prefix ``/`` stays Envoy's ``prefix: /``;
- header ``value`` / ``contains`` / ``present`` → ``string_match.exact`` / ``string_match.contains``
  / ``present_match`` (names lower-case on both sides; a repeated header holds a test when one of
  its values does, on both sides); NOT of ``value`` / ``contains`` → ``invert_match`` with
  ``treat_missing_header_as_empty`` (an absent header does not hold the value, so its NOT holds),
  except NOT of an empty ``value`` (an absent header would then read as holding it);
- NOT of a path condition, two path conditions in one AND branch: no exact equivalent.

A checked decision's routes carry the *unchecked mark*: Envoy adds ``x-truthlens-detected:
unavailable`` and ``x-truthlens-reason: processor_unreachable`` to every answer on them, and the
processor, which sees the response headers with the mark on every exchange of a checked decision,
replaces or removes it. An answer the processor never saw (down, unreachable: Envoy fails open)
keeps the mark, so unchecked is never silent. (The route config needs
``most_specific_header_mutations_wins: true`` so that the virtual host's removal of forged headers
runs before the route adds the mark; the shipped ``envoy.yaml`` sets it.) An exchange the processor
knows at its request headers it will not check moves to the first route through the processor,
matched on dynamic metadata its reply sets, and unmarked
(:mod:`truthlens.gateway.core.unchecked_route`; the filter must list the metadata's namespace in
``metadata_options.receiving_namespaces``, as the shipped ``envoy.yaml`` does).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from truthlens.gateway.core import re2_syntax
from truthlens.gateway.core.paths import PARAMS_RE2
from truthlens.gateway.core.unchecked_route import NAMESPACE, UNCHECKED_KEY
from truthlens.gateway.policy.config import Config
from truthlens.gateway.policy.decisions import (
    AllOf,
    Always,
    AnyOf,
    HeaderRule,
    KeywordRule,
    ModelRule,
    Not,
    PathRule,
    Rule,
)

DEFAULT_CLUSTER = "llm_upstream"
DEFAULT_TIMEOUT = "300s"
CONTEXT_FIELD_KEY = "hallucination.context.extension_field"
EXT_PROC_FILTER = "envoy.filters.http.ext_proc"
_PER_ROUTE_TYPE = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
# An OR of ANDs of ORs multiplies out; past this many routes for one decision, stop instead.
MAX_ROUTES_PER_DECISION = 32
# The paths of the shipped envoy.yaml that carry no answers and never went through the processor.
SHIPPED_BYPASSED_PATHS = ("/v1/models", "/health")
_DURATION = re.compile(r"^[0-9]+(\.[0-9]+)?s$")
# What Envoy writes on a checked route until the processor replaces it (see the module docstring).
UNCHECKED_MARK: dict[str, str] = {"x-truthlens-detected": "unavailable", "x-truthlens-reason": "processor_unreachable"}


def unchecked_route(target: dict[str, str]) -> dict[str, Any]:
    """The route an exchange the processor will not check moves to: matched on the metadata of
    the processor's reply alone (no request can take it by itself), through the processor (its
    reply already asked for no later phase but the request body's), unmarked."""
    metadata = {"filter": NAMESPACE, "path": [{"key": UNCHECKED_KEY}], "value": {"bool_match": True}}
    return {"name": "processor:unchecked", "match": {"prefix": "/", "dynamic_metadata": [metadata]},
            "route": dict(target)}


def unchecked_mark() -> list[dict[str, Any]]:
    """The ``response_headers_to_add`` of a checked route: the mark, overwriting any value."""
    return [{"header": {"key": k, "value": v}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}
            for k, v in UNCHECKED_MARK.items()]


class RoutesError(ValueError):
    """The routes cannot be generated as asked (the message says why and what to change)."""


class _Inexact(Exception):
    """A rule Envoy cannot evaluate exactly; the message says why."""


@dataclass(frozen=True, slots=True)
class _Term:
    rule: PathRule | HeaderRule
    negated: bool


@dataclass(frozen=True, slots=True)
class Entry:
    """One Envoy route and the comment printed above it."""

    comment: str
    route: dict[str, Any]
    bypass: bool  # ext_proc disabled on it
    decision: str | None = None  # the decision it was made for (None: shipped paths, catch-all)


@dataclass(frozen=True, slots=True)
class RoutePlan:
    entries: tuple[Entry, ...]
    stopped: str | None = None  # why emission stopped before the last decision (None: it did not)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def routes(self) -> list[dict[str, Any]]:
        return [e.route for e in self.entries]

    @property
    def bypassed(self) -> list[str]:
        """Names of the decisions that got bypass routes."""
        return list(dict.fromkeys(e.decision for e in self.entries if e.bypass and e.decision is not None))


def plan(config: Config, *, cluster: str = DEFAULT_CLUSTER, timeout: str = DEFAULT_TIMEOUT,
         forward_context_field: bool = False) -> RoutePlan:
    """The routes for ``config``; raises :class:`RoutesError` when a bypass route would forward
    the context extension field and ``forward_context_field`` does not accept it."""
    if not cluster:
        raise RoutesError("--cluster must not be empty")
    if not _DURATION.match(timeout):
        raise RoutesError(f"--timeout {timeout!r} is not an Envoy duration in seconds (e.g. 300s)")
    target = {"cluster": cluster, "timeout": timeout}
    entries: list[Entry] = [
        Entry(f"{path}: carries no answers; never through the processor (as in the shipped envoy.yaml)",
              {"name": f"shipped:{path}", "match": {"path": path}, "route": dict(target),
               "typed_per_filter_config": _disabled()}, bypass=True)
        for path in SHIPPED_BYPASSED_PATHS
    ]
    entries.append(Entry("exchanges the processor will not check (no decision, detection off): its reply to their "
                         "request headers moves them here, past the unchecked mark", unchecked_route(target), False))
    stopped: str | None = None
    bypass_routes = 0
    for decision in config.decisions:
        off = decision.route is None
        try:
            matches = _envoy_matches(decision.rules)
        except _Inexact as exc:
            stopped = (f'decision "{decision.name}" (priority {decision.priority}): {exc}; no route after it '
                       "skips the processor")
            break
        kind = "detection off: BYPASSES the processor" if off else "checked: through the processor"
        for i, match in enumerate(matches):  # none: the decision matches no request
            name = f"{'bypass' if off else 'processor'}:{decision.name}"
            route: dict[str, Any] = {"name": name if len(matches) == 1 else f"{name}#{i + 1}",
                                     "match": match, "route": dict(target)}
            if off:
                route["typed_per_filter_config"] = _disabled()
            else:
                route["response_headers_to_add"] = unchecked_mark()
            head = f'decision "{decision.name}" (priority {decision.priority}, {kind})'
            if len(matches) > 1:
                head += f", OR branch {i + 1} of {len(matches)}"
            entries.append(Entry(head, route, off, decision.name))
            bypass_routes += off
    field_name = config.hallucination.context.extension_field
    if bypass_routes and field_name is not None and not forward_context_field:
        raise RoutesError(
            f"{CONTEXT_FIELD_KEY} is {field_name!r}: the processor removes that field from every request body "
            "so the upstream never sees it, and a route that skips the processor cannot. Set "
            f"{CONTEXT_FIELD_KEY}: null when clients never send it, or pass --forward-context-field to accept "
            f"that requests on bypassed routes reach the upstream with {field_name!r} in their body"
        )
    last = "everything else: through the processor (requests no decision matches"
    last += f"; STOPPED at {stopped})" if stopped else ")"
    entries.append(Entry(last,
                         {"name": "processor:catch-all", "match": {"prefix": "/"}, "route": dict(target)}, False))
    notes: tuple[str, ...] = ()
    if bypass_routes and field_name is not None:
        notes = (f"--forward-context-field: bypassed requests reach the upstream with {field_name!r} in their body.",)
    return RoutePlan(tuple(entries), stopped, notes)


def render(result: RoutePlan, *, source: str = "", digest: str = "") -> str:
    """The plan as a commented YAML document ``routes: [...]``."""
    lines = [
        f"# Envoy routes for {source or 'the config'}{f' (digest {digest})' if digest else ''}, "
        "written by `truthlens envoy-routes`.",
        "# Replace the `routes:` of virtual_hosts[0] in envoy.yaml with this list (first match wins).",
        "# A route marked BYPASS sends its exchanges straight to the upstream: no ext_proc message, so no",
        "# check, the processor's metrics do not count the exchange, and no body-level scrub of verdict",
        "# fields or stream events the upstream forged (forged X-TruthLens-* headers are still removed by",
        "# the virtual host's response_headers_to_remove), no request body size limit from buffering.",
        "# A checked decision's routes mark every answer `x-truthlens-detected: unavailable`,",
        "# `x-truthlens-reason: processor_unreachable` until the processor replaces it (needs",
        "# most_specific_header_mutations_wins: true on the route_config, as the shipped envoy.yaml has);",
        "# the processor moves an exchange it will not check to processor:unchecked (needs the ext_proc",
        "# filter's metadata_options.receiving_namespaces.untyped to list truthlens, as the shipped",
        "# envoy.yaml has).",
        "# Regenerate whenever the config's decisions change.",
    ]
    lines += [f"# {note}" for note in result.notes]
    if result.stopped:
        lines.append(f"# Stopped at {result.stopped}.")
    lines.append("routes:")
    for entry in result.entries:
        lines.append(f"  # {'BYPASS - ' if entry.bypass else ''}{entry.comment}")
        dumped = dump_yaml([entry.route])
        lines += [f"  {line}" for line in dumped.splitlines()]
    return "\n".join(lines) + "\n"


class _EnvoyDumper(yaml.SafeDumper):
    """Quotes every string that a YAML 1.1 reader could take for something else."""


# Envoy's YAML reader takes y / n / yes / on ... for booleans (PyYAML only some of them).
_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./:@#-]*$")
_YAML11_SCALARS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    plain = _PLAIN.match(value) is not None and value.lower() not in _YAML11_SCALARS
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=None if plain else '"')


_EnvoyDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """``data`` as block YAML that Envoy reads back unchanged (strings quoted where needed)."""
    return str(yaml.dump(data, Dumper=_EnvoyDumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True))


def _disabled() -> dict[str, Any]:
    return {EXT_PROC_FILTER: {"@type": _PER_ROUTE_TYPE, "disabled": True}}


# ---------------------------------------------------------------------------- rules → matches


def _envoy_matches(rule: Rule) -> list[dict[str, Any]]:
    """Envoy route matches whose union is exactly the requests ``rule`` holds for (raises
    :class:`_Inexact` otherwise); an empty list: no request."""
    branches = _dnf(rule, negated=False)
    if len(branches) > MAX_ROUTES_PER_DECISION:
        raise _Inexact(f"its rules expand to more than {MAX_ROUTES_PER_DECISION} routes ({len(branches)})")
    return [_match(branch) for branch in branches]


def _dnf(rule: Rule, *, negated: bool) -> list[list[_Term]]:
    """``rule`` (NOT pushed down to the conditions) as an OR of ANDs of conditions."""
    if isinstance(rule, Always):
        return [] if negated else [[]]
    if isinstance(rule, Not):
        return _dnf(rule.rule, negated=not negated)
    if isinstance(rule, (AllOf, AnyOf)):
        parts = [_dnf(r, negated=negated) for r in rule.rules]
        conjunction = isinstance(rule, AllOf) != negated  # De Morgan
        if not conjunction:
            return [branch for part in parts for branch in part]
        out: list[list[_Term]] = [[]]
        for part in parts:
            out = [a + b for a in out for b in part]
            if len(out) > MAX_ROUTES_PER_DECISION * 4:
                raise _Inexact(f"its rules expand to more than {MAX_ROUTES_PER_DECISION} routes")
        return out
    if isinstance(rule, (PathRule, HeaderRule)):
        return [[_Term(rule, negated)]]
    if isinstance(rule, ModelRule):
        raise _Inexact("a model rule: only the request body tells the model")
    if isinstance(rule, KeywordRule):
        raise _Inexact("a keyword rule: only the request body tells the user's text")
    raise _Inexact(f"a rule Envoy cannot evaluate ({type(rule).__name__})")


def _match(branch: Sequence[_Term]) -> dict[str, Any]:
    paths = [t for t in branch if isinstance(t.rule, PathRule)]
    if len(paths) > 1:
        raise _Inexact("two path conditions in one AND branch (an Envoy route matches one path)")
    match: dict[str, Any] = {"prefix": "/"}
    if paths:
        term = paths[0]
        assert isinstance(term.rule, PathRule)
        if term.negated:
            raise _Inexact("NOT of a path condition (an Envoy route cannot negate its path)")
        match = _path_match(term.rule)
    headers = [_header_match(t.rule, t.negated) for t in branch if isinstance(t.rule, HeaderRule)]
    if headers:
        match["headers"] = headers
    return match


def _path_match(rule: PathRule) -> dict[str, Any]:
    if rule.test != "regex" and ("?" in rule.operand or "#" in rule.operand):
        # The processor compares the path without its query string, so such a rule never holds.
        raise _Inexact(f"path {rule.test} {rule.operand!r} holds a '?' or '#'")
    if rule.test == "prefix" and rule.operand == "/":
        return {"prefix": "/"}  # every path
    if rule.test == "exact" and rule.operand == "/":
        return {"safe_regex": {"regex": f"(?:/(?:{PARAMS_RE2})?)+"}}  # the root, however spelt
    pattern = rule.operand if rule.test == "regex" else "^" + re.escape(rule.operand)
    if rule.test == "exact":
        pattern += "$"
    try:
        return {"safe_regex": {"regex": re2_syntax.path_regex(pattern)}}
    except ValueError as exc:
        raise _Inexact(f"path {rule.test} {rule.operand!r}: {exc}") from None


def _header_match(rule: HeaderRule, negated: bool) -> dict[str, Any]:
    if rule.test == "present":
        return {"name": rule.name, "present_match": bool(rule.operand) != negated}
    operand = str(rule.operand)
    matcher: dict[str, Any] = {"name": rule.name,
               "string_match": {"exact": operand} if rule.test == "value" else {"contains": operand}}
    if negated:
        if operand == "":
            raise _Inexact(f'NOT of header {rule.name!r} value "" (Envoy would read an absent header as '
                           "holding the empty value)")
        matcher["invert_match"] = True
        matcher["treat_missing_header_as_empty"] = True
    return matcher
