"""``truthlens check-config``'s warnings about what a valid config leaves unchecked: an API no
decision checks while one checks another (chat completions, the Responses API, the legacy
completions API), and
an Envoy config whose routes differ from the ones the config needs (``--envoy``: bypass routes
missing for detection-off decisions, or routes that skip the processor for requests a checked
decision would take, an unchecked mark on requests no decision checks, or no unmarked route for the exchanges the
processor moves off the marked ones)."""

from __future__ import annotations

from typing import Any

import yaml

from truthlens.gateway.envoy import routes as envoy_routes
from truthlens.gateway.policy.config import Config
from truthlens.gateway.policy.decisions import AllOf, Always, AnyOf, Not, PathRule, RequestFacts, Rule

# The APIs the gateway reads, by a path a client posts to.
API_PATHS = {"chat completions": "/v1/chat/completions", "the Responses API": "/v1/responses",
             "the legacy completions API": "/v1/completions"}


def _may_match(rule: Rule, path: str) -> bool | None:
    """Whether ``rule`` holds for a request to ``path``: True / False when the path decides it,
    None when other conditions (headers, model, keywords) do."""
    if isinstance(rule, Always):
        return True
    if isinstance(rule, PathRule):
        return rule.matches(RequestFacts(path=path, method="POST", headers={}))
    if isinstance(rule, Not):
        inner = _may_match(rule.rule, path)
        return None if inner is None else not inner
    if isinstance(rule, AllOf):
        results = [_may_match(r, path) for r in rule.rules]
        return False if False in results else (None if None in results else True)
    if isinstance(rule, AnyOf):
        results = [_may_match(r, path) for r in rule.rules]
        return True if True in results else (None if None in results else False)
    return None  # headers, model, keywords: the request decides


def api_warnings(config: Config) -> list[str]:
    """A warning per API no checked decision can take while some checked decision takes another's."""
    checked = {api: any(d.route is not None and _may_match(d.rules, path) is not False for d in config.decisions)
               for api, path in API_PATHS.items()}
    if not any(checked.values()):
        return []
    on = next(api for api, yes in checked.items() if yes)
    return [f"checks {on} but no checked decision takes {off} ({API_PATHS[off]}): those answers pass "
            f"unchecked. Add a path condition for {API_PATHS[off]} (e.g. an OR beside the existing one), "
            "or ignore this if that API is not served." for off, yes in checked.items() if not yes]


def envoy_warnings(config: Config, envoy_yaml: str) -> list[str]:
    """Differences between the routes of ``envoy_yaml`` and the routes ``config`` needs."""
    try:
        doc = yaml.safe_load(envoy_yaml)
        if isinstance(doc, dict) and "static_resources" not in doc:
            hint = " (it looks like the processor's config: --envoy takes envoy.yaml)" if "decisions" in doc else ""
            return [f"is not an Envoy bootstrap: it has no static_resources{hint}"]
        hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        routes: list[dict[str, Any]] = hcm["route_config"]["virtual_hosts"][0]["routes"]
    except (yaml.YAMLError, KeyError, IndexError, TypeError) as exc:
        return [f"cannot read the virtual host's routes ({type(exc).__name__}: {exc})"]
    plan = envoy_routes.plan(config, forward_context_field=True)
    have = {_key(r): r for r in routes}
    out: list[str] = []
    for entry in plan.entries:
        if entry.decision is None:
            continue
        found = have.get(_key(entry.route))
        if entry.bypass and (found is None or not _bypasses(found)):
            out.append(f'decision "{entry.decision}" is detection off, but no route skips the processor for it '
                       "(each of its requests costs ext_proc messages)")
        elif not entry.bypass and found is not None and _bypasses(found):
            out.append(f'decision "{entry.decision}" is checked, but a route skips the processor for its '
                       "requests: its answers go unchecked")
    wanted = {_key(e.route) for e in plan.entries}
    for route in routes:
        if _key(route) not in wanted and _bypasses(route):
            out.append(f"route {route.get('name') or route.get('match')} skips the processor, and no detection-off "
                       "decision of the config matches exactly its requests")
        if _marked(route) and _key(route) not in {_key(e.route) for e in plan.entries if not e.bypass and e.decision}:
            out.append(f"route {route.get('name') or route.get('match')} marks answers unavailable/"
                       "processor_unreachable, but no checked decision matches exactly its requests (an answer "
                       "the processor skips keeps the mark)")
    first_marked = next((i for i, route in enumerate(routes) if _marked(route)), None)
    unchecked = _key(envoy_routes.unchecked_route({}))
    if first_marked is not None and unchecked not in {_key(r) for r in routes[:first_marked]}:
        out.append("no route before the marked ones matches the processor's unchecked metadata (processor:unchecked): "
                   "an answer the processor will not check (no decision matches, or detection off) keeps the mark "
                   "unavailable/processor_unreachable")
    if out:
        out.append("`truthlens envoy-routes` prints the routes this config needs")
    return out


def _key(route: dict[str, Any]) -> str:
    return yaml.safe_dump(route.get("match"), sort_keys=True)


def _marked(route: dict[str, Any]) -> bool:
    """Whether the route adds the unchecked mark to its answers (the processor replaces it)."""
    added = route.get("response_headers_to_add") or []
    return any(h.get("header", {}).get("key") == "x-truthlens-detected" for h in added)


def _bypasses(route: dict[str, Any]) -> bool:
    per = (route.get("typed_per_filter_config") or {}).get(envoy_routes.EXT_PROC_FILTER) or {}
    return bool(per.get("disabled"))
