"""``truthlens envoy-routes``: decisions → Envoy routes, bypass routes only where Envoy decides
exactly as the processor does. Pure (real config parsing, the real CLI); nothing is scripted.
The routes' behaviour in a real Envoy is ``tests/envoy/test_bypass_routes.py``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens import cli
from truthlens.gateway.core.paths import normal_path
from truthlens.gateway.envoy import routes as envoy_routes
from truthlens.gateway.policy.config import parse_config
from truthlens.gateway.policy.decisions import RequestFacts, compile_rules

CHECK = [{"type": "hallucination", "configuration": {"mode": "lightweight"}}]
OFF = [{"type": "hallucination", "configuration": {"enabled": False}}]
# Every table begins with the shipped paths that carry no answers and the route an exchange the
# processor will not check moves to (truthlens.gateway.core.unchecked_route).
HEAD = ["shipped:/v1/models", "shipped:/health", "processor:unchecked"]
FIRST = len(HEAD)  # the first decision's route
CATCH_ALL = "processor:catch-all"


def config(*decisions: dict[str, Any], extension_field: str | None = None) -> Any:
    return parse_config({"version": 1, "hallucination": {"context": {"extension_field": extension_field}},
                         "decisions": list(decisions)})


def decision(name: str, rules: Any, *, priority: int = 100, off: bool = False) -> dict[str, Any]:
    return {"name": name, "priority": priority, "rules": rules, "plugins": OFF if off else CHECK}


def header(name: str, **test: Any) -> dict[str, Any]:
    return {"type": "header", "name": name, **test}


def path(**test: str) -> dict[str, Any]:
    return {"type": "path", **test}


def names(result: envoy_routes.RoutePlan) -> list[str]:
    return [r["name"] for r in result.routes]


def by_name(result: envoy_routes.RoutePlan, name: str) -> dict[str, Any]:
    return next(r for r in result.routes if r["name"] == name)


def bypassed(route: dict[str, Any]) -> bool:
    return bool(route.get("typed_per_filter_config", {}).get("envoy.filters.http.ext_proc", {}).get("disabled"))


def test_decisions_are_emitted_in_the_processors_order_checked_ones_through_the_processor() -> None:
    result = envoy_routes.plan(config(
        decision("free", header("x-tenant", value="free"), priority=50, off=True),
        decision("vip", header("x-tenant", value="vip"), priority=90),  # outranks "free"
        decision("chat", path(prefix="/v1/chat"), priority=10),
    ))
    assert names(result) == [*HEAD, "processor:vip", "bypass:free", "processor:chat", CATCH_ALL]
    assert not bypassed(by_name(result, "processor:vip")) and bypassed(by_name(result, "bypass:free"))
    assert not bypassed(by_name(result, CATCH_ALL)) and by_name(result, CATCH_ALL)["match"] == {"prefix": "/"}
    assert result.bypassed == ["free"] and result.stopped is None


@pytest.mark.parametrize(("rule", "why"), [
    ({"type": "keyword", "any": ["dose"]}, "keyword rule"),
    ({"type": "model", "name": "gpt-x"}, "model rule"),
    ({"operator": "OR", "conditions": [header("x-a", present=True), {"type": "model", "any": ["m"]}]}, "model rule"),
])
def test_emission_stops_at_the_first_decision_the_body_decides(rule: Any, why: str) -> None:
    result = envoy_routes.plan(config(
        decision("early-off", header("x-a", value="1"), priority=90, off=True),
        decision("medical", rule, priority=50),
        decision("late-off", header("x-b", value="1"), priority=10, off=True),
    ))
    assert names(result) == [*HEAD, "bypass:early-off", CATCH_ALL]  # late-off goes through the processor
    assert result.stopped is not None and '"medical"' in result.stopped and why in result.stopped
    text = envoy_routes.render(result)
    assert re.search(r'^# Stopped at decision "medical" .*' + why, text, re.MULTILINE)


def test_or_becomes_one_route_per_branch_and_and_one_route_with_path_and_headers() -> None:
    result = envoy_routes.plan(config(decision("off", {"operator": "OR", "conditions": [
        header("X-Team", value="platform"),
        {"operator": "AND", "conditions": [path(prefix="/v1/chat"), header("x-a", contains="b"),
                                           header("x-c", present=True)]},
    ]}, off=True)))
    assert names(result) == [*HEAD, "bypass:off#1", "bypass:off#2", CATCH_ALL]
    assert by_name(result, "bypass:off#1")["match"] == {
        "prefix": "/", "headers": [{"name": "x-team", "string_match": {"exact": "platform"}}]}
    off2 = by_name(result, "bypass:off#2")["match"]
    assert off2["headers"] == [{"name": "x-a", "string_match": {"contains": "b"}}, {"name": "x-c", "present_match": True}]
    assert re.fullmatch(off2["safe_regex"]["regex"], "/V1/chat/completions/") is not None


def test_and_over_or_multiplies_out_and_too_many_branches_stop() -> None:
    two_by_two = {"operator": "AND", "conditions": [
        {"operator": "OR", "conditions": [path(prefix="/a"), path(prefix="/b")]},
        {"operator": "OR", "conditions": [header("x", value="1"), header("y", value="1")]},
    ]}
    result = envoy_routes.plan(config(decision("off", two_by_two, off=True)))
    matches = [r["match"] for r in result.routes if r["name"].startswith("bypass:off")]
    assert [(re.fullmatch(m["safe_regex"]["regex"], "/a") is not None, m["headers"][0]["name"]) for m in matches] \
        == [(True, "x"), (True, "y"), (False, "x"), (False, "y")]
    for width in (6, 3):  # 216 branches (stopped while multiplying), 36 (stopped after)
        wide = {"operator": "AND", "conditions": [
            {"operator": "OR", "conditions": [header(f"h{i}{j}", present=True) for j in range(width)]}
            for i in range(3)]}
        if width == 3:
            wide["conditions"][0]["conditions"].append(header("h9", present=True))  # 4 x 3 x 3 = 36
        result = envoy_routes.plan(config(decision("wide", wide, off=True)))
        assert result.bypassed == [] and result.stopped is not None and "more than 32 routes" in result.stopped


def test_path_conditions() -> None:
    result = envoy_routes.plan(config(
        decision("p", path(prefix="/v1/chat"), off=True, priority=3),
        decision("e", path(exact="/v1/responses"), off=True, priority=2),
        decision("r", path(regex=r"^/v1/(chat|responses)/[a-z0-9_-]+\.json$"), off=True, priority=1),
    ))
    for name in ("bypass:p", "bypass:e", "bypass:r"):
        assert list(by_name(result, name)["match"]) == ["safe_regex"]
    exact = by_name(result, "bypass:e")["match"]["safe_regex"]["regex"]
    assert [p for p in ("/v1/responses", "/V1/Responses/", "/v1/responses;x", "/v1/responses/x")
            if re.fullmatch(exact, p)] == ["/v1/responses", "/V1/Responses/", "/v1/responses;x"]


@pytest.mark.parametrize("pattern", [
    r"^/v1/(chat|responses)/[a-z0-9_-]+\.json$", r"completions", r"/v[12]/[a-z]+?models$", r"^/a{2,3}b?c*$",
    r"[a-z]+/x", r"\.\*\+\?\(\)\[\]\{\}\|\^\$", r"(?:/x)|(?P<y>/y)", r"\A/z", r"[\]\-]", r"^/v1/",
    r"chat/", r"(?:/[a-z]+)+$", r"s$",
])
def test_a_path_regex_becomes_an_re2_full_match_that_holds_where_python_search_holds(pattern: str) -> None:
    # The RE2 text is made of constructs Python reads the same way, so Python's fullmatch checks it.
    rebuilt = re.compile(envoy_routes.plan(config(decision("r", path(regex=pattern), off=True))).routes[FIRST]
                         ["match"]["safe_regex"]["regex"])
    samples = ["/v1/chat/a-b_1.json", "/v1/chat/A.json", "/v1/completions", "/v2/x/models", "/v1/models/x",
               "/aab", "/aaac", "/ab", "/abc/x", "/x", "/y", "/z", "/a/z", "/.*+?()[]{}|^$", "/]", "/-", "/",
               "/v1/chat/", "/V1/CHAT/A-B_1.JSON", "/v1/chat;p/a.json", "/v1;p/chat/a.json;q/", "/v1/", "/v1//",
               "/v1/;p", "/v1/;p/x", "/chat;/x", "/a;x/b", "/chats;p", "/v2/x/models/", "/a;s", "/;x", "//"]
    for sample in samples:
        expected = re.search(pattern, normal_path(sample)) is not None
        envoy_path = re.split(r"[?#]", sample, maxsplit=1)[0]  # Envoy's regex sees the path less its query
        assert (rebuilt.fullmatch(envoy_path) is not None) == expected, sample


@pytest.mark.parametrize(("pattern", "why"), [
    (r"^/v\d/chat", "character class"), (r"\bchat", "anchor"), (r"(?i)/chat", "inline flags"),
    (r"chat.*", "'.'"), (r"[^/]+/x", "negated"), (r"/v1/$", "'/' not followed"), (r"[a/]", "holding '/'"),
    (r"^/", "the whole match"), (r"chat[A-Z]", "upper-case letters only"), (r"chat;x", "';'"),
    (r"/é", "non-ASCII"),
    # Look-arounds, back-references, \Z and repeats over 1000 are not RE2: the config refuses them
    # (tests/unit/test_decisions.py).
])
def test_a_regex_whose_meaning_could_differ_in_re2_stops_emission(pattern: str, why: str) -> None:
    result = envoy_routes.plan(config(decision("r", path(regex=pattern), off=True)))
    assert result.bypassed == [] and result.stopped is not None and why in result.stopped


def test_header_conditions_and_their_negations() -> None:
    def match(rule: Any) -> dict[str, Any]:
        return envoy_routes.plan(config(decision("h", rule, off=True))).routes[FIRST]["match"]

    def negated(leaf: Any) -> Any:
        return {"operator": "NOT", "conditions": [leaf]}

    assert match(header("X-A", value="")) == {"prefix": "/", "headers": [{"name": "x-a", "string_match": {"exact": ""}}]}
    assert match(header("x-a", present=True))["headers"] == [{"name": "x-a", "present_match": True}]
    assert match(header("x-a", present=False))["headers"] == [{"name": "x-a", "present_match": False}]
    assert match(negated(header("x-a", present=True)))["headers"] == [{"name": "x-a", "present_match": False}]
    assert match(negated(header("x-a", value="1")))["headers"] == [{
        "name": "x-a", "string_match": {"exact": "1"}, "invert_match": True, "treat_missing_header_as_empty": True}]
    assert match(negated(header("x-a", contains="no")))["headers"] == [{
        "name": "x-a", "string_match": {"contains": "no"}, "invert_match": True, "treat_missing_header_as_empty": True}]
    # NOT (A AND B) = NOT A OR NOT B: two routes
    result = envoy_routes.plan(config(decision("h", negated(
        {"operator": "AND", "conditions": [header("x-a", present=True), header("x-b", present=True)]}), off=True)))
    assert [r["match"]["headers"] for r in result.routes[FIRST:FIRST + 2]] == [
        [{"name": "x-a", "present_match": False}], [{"name": "x-b", "present_match": False}]]


@pytest.mark.parametrize(("rule", "why"), [
    ({"operator": "NOT", "conditions": [header("x-a", value="")]}, "absent header"),
    ({"operator": "NOT", "conditions": [path(prefix="/v1")]}, "NOT of a path"),
    ({"operator": "AND", "conditions": [path(prefix="/v1"), path(prefix="/v1/chat")]}, "two path conditions"),
    (path(prefix="/v1?x"), "'?'"),
])
def test_what_envoy_cannot_express_exactly_stops_emission(rule: Any, why: str) -> None:
    result = envoy_routes.plan(config(decision("x", rule, off=True, priority=50),
                                      decision("later", header("x-z", value="1"), off=True, priority=10)))
    assert names(result) == [*HEAD, CATCH_ALL]
    assert result.stopped is not None and '"x"' in result.stopped and why in result.stopped


def test_the_output_is_commented_yaml_that_parses_back_to_the_routes() -> None:
    result = envoy_routes.plan(config(
        decision("vip", header("x-tenant", value="y"), priority=90),  # "y": a YAML 1.1 boolean if unquoted
        decision("free", header("x-tenant", value="off"), priority=50, off=True),
    ), cluster="backend", timeout="45s")
    text = envoy_routes.render(result, source="config.yaml", digest="abc")
    assert yaml.safe_load(text) == {"routes": result.routes}
    assert 'exact: "y"' in text and 'exact: "off"' in text and 'timeout: "45s"' in text
    assert all(r["route"] == {"cluster": "backend", "timeout": "45s"} for r in result.routes)
    assert "# BYPASS - decision \"free\"" in text and "response_headers_to_remove" in text
    assert "the processor's metrics do not count the exchange" in text


def write(tmp_path: Path, *decisions: dict[str, Any], extension_field: str | None = "truthlens_context") -> str:
    doc = {"version": 1, "hallucination": {"context": {"extension_field": extension_field}},
           "decisions": list(decisions)}
    target = tmp_path / "config.yaml"
    target.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(target)


def test_the_cli_refuses_bypass_routes_that_would_forward_the_context_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    file = write(tmp_path, decision("free", header("x-tenant", value="free"), off=True))
    assert cli.main(["envoy-routes", file]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "hallucination.context.extension_field is 'truthlens_context'" in captured.err
    assert "--forward-context-field" in captured.err
    assert cli.main(["envoy-routes", file, "--forward-context-field"]) == 0
    out = capsys.readouterr().out
    assert "bypass:free" in out and "'truthlens_context' in their body" in out
    # Without the field configured, no flag is needed.
    file = write(tmp_path, decision("free", header("x-tenant", value="free"), off=True), extension_field=None)
    assert cli.main(["envoy-routes", file]) == 0
    assert "bypass:free" in capsys.readouterr().out


def test_the_cli_without_bypass_routes_needs_no_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = write(tmp_path, decision("chat", path(prefix="/v1/chat")))
    assert cli.main(["envoy-routes", file]) == 0
    assert [r["name"] for r in yaml.safe_load(capsys.readouterr().out)["routes"]] == [
        *HEAD, "processor:chat", CATCH_ALL]


def test_the_cli_names_the_bad_key_and_refuses_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ndecisions:\n  - name: x\n    rules: {type: nope}\n", encoding="utf-8")
    assert cli.main(["envoy-routes", str(bad)]) == 1
    assert "decisions[0].rules.type" in capsys.readouterr().err
    file = write(tmp_path, decision("chat", path(prefix="/v1/chat")))
    assert cli.main(["envoy-routes", file, "--timeout", "5m"]) == 1
    assert "--timeout '5m'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["envoy-routes", file, "--bypass-everything"])
    assert exc.value.code == 2
    assert cli.main(["envoy-routes"]) == 2  # the file is required
    assert "truthlens envoy-routes FILE" in capsys.readouterr().err


def test_the_cli_still_takes_the_file_as_the_deprecated_config_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    file = write(tmp_path, decision("chat", path(prefix="/v1/chat")))
    assert cli.main(["envoy-routes", "--config", file]) == 0
    captured = capsys.readouterr()
    assert "processor:chat" in captured.out
    assert "--config FILE is deprecated; use: truthlens envoy-routes FILE" in captured.err
    assert cli.main(["envoy-routes", file, "--config", file]) == 2  # named twice: ambiguous, refused
    assert "name the config file once" in capsys.readouterr().err


@pytest.mark.parametrize("rule", [path(prefix="/v1/chat/completions"), path(exact="/v1/responses"), path(prefix="/v1/"),
                                  path(exact="/"), path(exact="/v1/Responses/")])
def test_prefix_and_exact_routes_hold_exactly_where_the_processors_rule_does(rule: dict[str, Any]) -> None:
    match = envoy_routes.plan(config(decision("r", rule, off=True))).routes[FIRST]["match"]
    processor = compile_rules(rule, "r")
    for sample in ["/v1/chat/completions", "/V1/chat/completions", "/v1/chat/completions/", "/v1/chat/completions;x",
                   "/v1;a/chat/completions;b/", "/v1/chat/completionsx", "/v1/responses", "/v1/Responses",
                   "/v1/responses/", "/v1/responses;x", "/v1/responses;x/", "/v1/responses/x", "/v1/responsesx",
                   "/v1", "/v1/", "/v1/;p", "/v1/;p/x", "/", "/;x", "/x", "/v1/responses?x=1"]:
        envoy_path = sample.split("?", 1)[0]
        envoy = match == {"prefix": "/"} or re.fullmatch(match["safe_regex"]["regex"], envoy_path) is not None
        facts = RequestFacts(path=sample, method="POST", headers={})
        assert envoy == processor.matches(facts), (rule, sample)


def test_the_route_of_unchecked_exchanges_comes_first_matches_only_the_processors_metadata_and_is_unmarked() -> None:
    result = envoy_routes.plan(config(decision("chat", path(prefix="/v1/chat"), priority=10)))
    route = by_name(result, "processor:unchecked")
    assert result.routes.index(route) < result.routes.index(by_name(result, "processor:chat"))
    assert route["match"] == {"prefix": "/", "dynamic_metadata": [
        {"filter": "truthlens", "path": [{"key": "unchecked"}], "value": {"bool_match": True}}]}
    assert "response_headers_to_add" not in route and not bypassed(route)
    assert route["route"] == by_name(result, "processor:chat")["route"]  # the same target, unmarked
    assert "response_headers_to_add" in by_name(result, "processor:chat")
