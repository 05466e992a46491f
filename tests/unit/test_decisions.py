"""Decision matching: rule trees compiled from YAML-shaped mappings, priority order, every
leaf type, and compile-time errors that name the key. Pure; nothing is scripted."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from truthlens.gateway.policy.config import parse_config
from truthlens.gateway.policy.decisions import NEEDS_BODY, RequestFacts, compile_rules, match, match_before_body
from truthlens.options import ConfigError


def facts(path: str = "/v1/chat/completions", *, headers: dict[str, str] | None = None,
          model: str = "m", text: str = "") -> RequestFacts:
    return RequestFacts(path=path, method="POST", headers=headers or {}, model=model, user_text=text)


def test_leaves() -> None:
    hdr = compile_rules({"type": "header", "name": "X-Tenant", "value": "acme"}, "r")
    assert hdr.matches(facts(headers={"x-tenant": "acme"}))
    assert not hdr.matches(facts(headers={"x-tenant": "acme2"}))
    assert not hdr.matches(facts())
    contains = compile_rules({"type": "header", "name": "user-agent", "contains": "bot"}, "r")
    assert contains.matches(facts(headers={"user-agent": "a-bot/1"}))
    absent = compile_rules({"type": "header", "name": "x-skip", "present": False}, "r")
    assert absent.matches(facts()) and not absent.matches(facts(headers={"x-skip": ""}))

    prefix = compile_rules({"type": "path", "prefix": "/v1/chat"}, "r")
    assert prefix.matches(facts("/v1/chat/completions?x=1")) and not prefix.matches(facts("/v1/embeddings"))
    exact = compile_rules({"type": "path", "exact": "/v1/chat/completions"}, "r")
    assert exact.matches(facts("/v1/chat/completions?stream=1")) and not exact.matches(facts("/v1/chat/completions/x"))
    regex = compile_rules({"type": "path", "regex": r"^/tenants/[^/]+/v1/chat"}, "r")
    assert regex.matches(facts("/tenants/a/v1/chat/completions"))

    model = compile_rules({"type": "model", "any": ["gpt-4o", "qwen"]}, "r")
    assert model.matches(facts(model="qwen")) and not model.matches(facts(model="llama"))
    assert compile_rules({"type": "model", "name": "llama"}, "r").matches(facts(model="llama"))


def test_keywords_whole_words_and_case() -> None:
    kw = compile_rules({"type": "keyword", "any": ["Dose", "C++", "mg/kg"]}, "r")
    assert kw.matches(facts(text="What DOSE is safe?"))
    assert not kw.matches(facts(text="he dosed off"))
    assert kw.matches(facts(text="learn c++ today"))
    assert kw.matches(facts(text="give 5 mg/kg."))
    assert kw.keywords == ("dose", "c++", "mg/kg")  # type: ignore[attr-defined]
    cs = compile_rules({"type": "keyword", "any": ["NASA"], "case_sensitive": True}, "r")
    assert cs.matches(facts(text="NASA said")) and not cs.matches(facts(text="nasa said"))


def test_boolean_trees() -> None:
    rule = compile_rules(
        {
            "operator": "AND",
            "conditions": [
                {"type": "path", "prefix": "/v1/chat"},
                {"operator": "OR", "conditions": [{"type": "model", "name": "a"}, {"type": "keyword", "any": ["drug"]}]},
                {"operator": "NOT", "conditions": [{"type": "header", "name": "x-skip", "present": True}]},
            ],
        },
        "rules",
    )
    assert rule.matches(facts(model="a"))
    assert rule.matches(facts(model="b", text="a drug question"))
    assert not rule.matches(facts(model="b", text="weather"))
    assert not rule.matches(facts(model="a", headers={"x-skip": "1"}))
    assert compile_rules(None, "rules").matches(facts("/anything"))


@pytest.mark.parametrize(
    ("raw", "key", "fragment"),
    [
        ({"operator": "AND", "conditions": [{"type": "domian", "name": "x"}]}, "rules.conditions[0].type",
         "unknown condition type 'domian' (expected one of domain, header, keyword, model, path)"),
        ({"operator": "XOR", "conditions": [{"type": "path", "prefix": "/"}]}, "rules.operator", "unknown operator"),
        ({"operator": "NOT", "conditions": [{"type": "path", "prefix": "/"}, {"type": "path", "prefix": "/a"}]},
         "rules.conditions", "exactly one"),
        ({"operator": "AND", "conditions": []}, "rules.conditions", "non-empty"),
        ({"type": "path", "prefix": "/", "exact": "/"}, "rules", "exactly one of prefix, exact, regex"),
        ({"type": "path", "regex": "("}, "rules.regex", "invalid regular expression"),
        ({"type": "header", "value": "x"}, "rules.name", "is required"),
        ({"type": "header", "name": "x", "present": "yes"}, "rules.present", "true or false"),
        ({"type": "keyword", "any": []}, "rules.any", "non-empty list"),
        ({"type": "keyword", "any": ["a"], "case": True}, "rules.case", "unknown key"),
        ({"type": "model", "any": ["a", 3]}, "rules.any[1]", "non-empty string"),
        ("path", "rules", "must be a mapping"),
    ],
)
def test_errors_name_the_key(raw: object, key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_rules(raw, "rules")
    assert info.value.key == key
    assert fragment in str(info.value)


def test_match_takes_the_highest_priority_then_file_order() -> None:
    cfg = parse_config(
        {
            "version": 1,
            "decisions": [
                {"name": "low", "priority": 1, "rules": {"type": "path", "prefix": "/v1"}},
                {"name": "high", "priority": 50, "rules": {"type": "keyword", "any": ["medical"]},
                 "plugins": [{"type": "hallucination", "configuration": {"threshold": 0.3}}]},
                {"name": "tie", "priority": 1, "rules": {"type": "path", "prefix": "/"}},
            ],
        }
    )
    assert [d.name for d in cfg.decisions] == ["high", "low", "tie"]
    hit = match(cfg, facts(text="a medical question"))
    assert hit is not None and hit.name == "high" and hit.route is not None and hit.route.threshold == 0.3
    hit = match(cfg, facts(text="weather"))
    assert hit is not None and hit.name == "low" and hit.route is None
    hit = match(cfg, facts("/other"))
    assert hit is not None and hit.name == "tie"
    assert match(parse_config({"version": 1}), facts()) is None


def test_matching_before_the_body_decides_on_headers_and_path_and_waits_only_for_body_rules() -> None:
    cfg = parse_config(
        {
            "version": 1,
            "decisions": [
                {"name": "tenant", "priority": 90, "rules": {"operator": "AND", "conditions": [
                    {"type": "header", "name": "x-tenant", "value": "acme"},
                    {"type": "keyword", "any": ["dose"]}]}},
                {"name": "chat", "priority": 10, "rules": {"type": "path", "prefix": "/v1/chat"}},
            ],
        }
    )
    # The AND already fails on its header: the body cannot change that, the path decides.
    chat = match_before_body(cfg, facts())
    assert chat is not NEEDS_BODY and chat is not None and chat.name == "chat"
    # The header holds, so the keyword in the body decides.
    assert match_before_body(cfg, facts(headers={"x-tenant": "acme"})) is NEEDS_BODY
    # No decision can match whatever the body says: nothing needs decoding.
    assert match_before_body(cfg, facts("/v1/embeddings")) is None
    negated = compile_rules({"operator": "NOT", "conditions": [{"type": "model", "name": "m"}]}, "r")
    assert negated.matches_without_body(facts()) is None
    either = compile_rules({"operator": "OR", "conditions": [{"type": "model", "name": "m"},
                                                             {"type": "path", "prefix": "/v1"}]}, "r")
    assert either.matches_without_body(facts()) is True


@pytest.mark.parametrize("path", [
    "/V1/chat/completions", "/v1/Chat/Completions", "/v1/chat/completions/", "/v1/chat/completions//",
    "/v1/chat/completions;x", "/v1;a/chat;b/completions;c/", "/V1/CHAT/COMPLETIONS/?stream=1",
])
def test_path_rules_read_case_trailing_slash_and_params_variants_as_the_path(path: str) -> None:
    # An upstream that routes these as /v1/chat/completions must not get them unchecked.
    for rule in ({"type": "path", "prefix": "/v1/chat/completions"}, {"type": "path", "exact": "/v1/chat/completions"},
                 {"type": "path", "regex": "^/v1/chat/completions$"}, {"type": "path", "exact": "/V1/Chat/Completions/"}):
        assert compile_rules(rule, "r").matches(facts(path)), (rule, path)


def test_a_prefix_with_a_trailing_slash_holds_under_it_only() -> None:
    rule = compile_rules({"type": "path", "prefix": "/v1/"}, "r")
    assert rule.matches(facts("/v1/chat")) and rule.matches(facts("/V1/x/"))
    assert not rule.matches(facts("/v1/")) and not rule.matches(facts("/v1"))


def test_a_path_regex_with_an_upper_case_letter_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        compile_rules({"type": "path", "regex": "^/V1/chat"}, "decisions[0].rules")
    assert "decisions[0].rules.regex" in str(info.value) and "lower case" in str(info.value)


def test_a_repeated_header_holds_a_test_when_one_of_its_values_does() -> None:
    # As Envoy's route matchers read it: the values one by one, never joined with ",".
    repeated = RequestFacts(path="/v1/chat/completions", method="POST", headers={"x-team": "a,platform"},
                            repeated={"x-team": ("a", "platform")})
    assert compile_rules({"type": "header", "name": "x-team", "value": "platform"}, "r").matches(repeated)
    assert not compile_rules({"type": "header", "name": "x-team", "contains": "a,p"}, "r").matches(repeated)
    negated = compile_rules({"operator": "NOT", "conditions": [
        {"type": "header", "name": "x-team", "value": "a"}]}, "r")
    assert not negated.matches(repeated)
    assert negated.matches(facts(headers={"x-team": "b"})) and negated.matches(facts())


def _within(seconds: float, work: Any) -> Any:
    """``work()``'s result; a failure when it has not returned after ``seconds`` (a hang guard,
    not a timing: a backtracking engine would take longer than the universe has left)."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert out, f"still matching after {seconds} s"
    return out[0]


def test_a_nested_quantifier_in_a_path_regex_runs_in_linear_time() -> None:
    # Adversarial round 3, N63: `^/v1/(a+)+$` passed check-config, and Python's backtracking `re`
    # took 7.4 s for `/v1/` + 28 'a' + '!' (doubling per 'a'), stalling the worker's event loop.
    # Path rules now run in RE2, as in Envoy: the same rule, 5,000 'a', answers at once.
    rule = compile_rules({"type": "path", "regex": "^/v1/(a+)+$"}, "decisions[0].rules")
    attack = "/v1/" + "a" * 5000
    assert _within(30, lambda: rule.matches(facts(attack + "!"))) is False
    assert _within(30, lambda: rule.matches(facts(attack))) is True


@pytest.mark.parametrize("pattern", [r"^/v1/(chat)/\1", r"^/v1/(?=chat)", r"^/v1/(?!embeddings)", r"(?<=/v1/)chat",
                                     r"/x\Z", r"a{1001}"])
def test_a_path_regex_that_re2_refuses_is_a_config_error_naming_the_key(pattern: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_rules({"type": "path", "regex": pattern}, "decisions[0].rules")
    assert info.value.key == "decisions[0].rules.regex" and "not valid RE2" in info.value.problem
