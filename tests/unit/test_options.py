"""The typed options toolkit (truthlens.options.Section): each reader returns its type, keeps
defaults for absent keys only, and names the full key path of every wrong value. Plain
mappings; nothing is scripted."""

from __future__ import annotations

from typing import Any

import pytest

from truthlens.options import ConfigError, OptionContext, Section

PATH = "decisions[0].plugins[0].configuration"
CTX = OptionContext(path=PATH, models=frozenset({"judge", "verifier"}))


def error_of(read: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        read()
    return info.value


def test_config_error_message_starts_with_the_key() -> None:
    err = ConfigError("a.b", "must be a number")
    assert (err.key, err.problem, str(err)) == ("a.b", "must be a number", "a.b: must be a number")
    assert isinstance(err, ValueError)


def test_a_section_must_be_a_mapping_and_null_is_empty() -> None:
    assert error_of(lambda: Section([1], "hallucination")).key == "hallucination"
    assert error_of(lambda: Section("x", "")).key == "(root)"
    empty = Section(None, "hallucination.standard")
    assert dict(empty.raw) == {} and empty.integer("max_iterations", 3) == 3


def test_keys_are_full_dotted_paths() -> None:
    root = Section({"budgets": {"total_ms": "soon"}}, "")
    assert root.key("budgets") == "budgets"
    budgets = root.section("budgets")
    assert budgets.key("total_ms") == "budgets.total_ms"
    assert error_of(lambda: budgets.number("total_ms", 1.0)).key == "budgets.total_ms"
    nested = Section({"acr": {"samples": 1}}, PATH).section("acr")
    assert error_of(lambda: nested.integer("samples", 3, lo=2)).key == f"{PATH}.acr.samples"
    assert error_of(lambda: Section({"acr": 5}, PATH).section("acr")).key == f"{PATH}.acr"


def test_unknown_keys_are_errors() -> None:
    s = Section({"samples": 3, "sample": 3}, PATH)
    err = error_of(lambda: s.allow("samples", "theta"))
    assert err.key == f"{PATH}.sample" and "expected one of samples, theta" in err.problem
    err = error_of(lambda: Section({"x": 1}, PATH).allow(hint="lightweight mode takes no options"))
    assert err.key == f"{PATH}.x" and "lightweight mode takes no options" in err.problem
    Section({"samples": 3}, PATH).allow("samples")  # all known: no error
    assert "samples" in s and "temperature" not in s


def test_boolean() -> None:
    s = Section({"on": True, "yes": "yes", "one": 1}, PATH)
    assert s.boolean("on", False) is True and s.boolean("absent", True) is True
    for name in ("yes", "one"):
        err = error_of(lambda name=name: s.boolean(name, False))
        assert err.key == f"{PATH}.{name}" and "true or false" in err.problem


def test_numbers_are_never_booleans_or_strings() -> None:
    s = Section({"flag": True, "word": "high", "n": 2}, PATH)
    for name in ("flag", "word"):
        assert "must be a number" in error_of(lambda name=name: s.number(name, 0.5)).problem
        assert "must be an integer" in error_of(lambda name=name: s.integer(name, 1)).problem
    value = s.number("n", 0.5)
    assert value == 2.0 and isinstance(value, float)
    assert s.number("absent", 0.5) == 0.5


def test_number_ranges() -> None:
    s = Section({"high": 1.5, "low": -1, "zero": 0}, PATH)
    assert "<= 1.0" in error_of(lambda: s.number("high", 0.0, lo=0.0, hi=1.0)).problem
    assert ">= 0.0" in error_of(lambda: s.number("low", 0.0, lo=0.0, hi=1.0)).problem
    err = error_of(lambda: s.number("zero", 1.0, positive=True))
    assert err.key == f"{PATH}.zero" and "> 0" in err.problem
    assert s.number("zero", 1.0, lo=0.0) == 0.0


def test_nan_and_infinity_are_never_numbers() -> None:
    # Adversarial round 3, N54: every comparison with NaN is false, so ``lo``/``hi``/``positive``
    # let ``.nan`` through and the value then failed every check it met. Every float key reads
    # through these two readers, so every one refuses it, naming the key.
    s = Section({"nan": float("nan"), "inf": float("inf"), "minus_inf": float("-inf")}, PATH)
    for name in ("nan", "inf", "minus_inf"):
        for read in (lambda n=name: s.number(n, 0.5, lo=0.0, hi=1.0), lambda n=name: s.number(n, 1.0, positive=True),
                     lambda n=name: s.number(n, 1.0), lambda n=name: s.optional_number(n)):
            err = error_of(read)
            assert err.key == f"{PATH}.{name}" and "must be a finite number" in err.problem


def test_integers() -> None:
    s = Section({"half": 2.5, "big": 11, "ok": 4}, PATH)
    assert error_of(lambda: s.integer("half", 3)).key == f"{PATH}.half"
    assert "<= 10" in error_of(lambda: s.integer("big", 3, lo=1, hi=10)).problem
    assert s.integer("ok", 3, lo=1, hi=10) == 4 and s.integer("absent", 3) == 3


def test_optional_numbers_read_null_as_not_set_but_never_a_wrong_type() -> None:
    s = Section({"unset": None, "t": 0.3, "bad": "warm", "n": 3}, PATH)
    assert s.optional_number("unset", 0.0) is None
    assert s.optional_number("absent", 0.0) == 0.0 and s.optional_number("absent") is None
    assert s.optional_number("t", None, lo=0.0, hi=1.0) == 0.3
    assert error_of(lambda: s.optional_number("bad", 0.0)).key == f"{PATH}.bad"
    assert s.optional_integer("unset") is None and s.optional_integer("absent") is None
    assert s.optional_integer("n", lo=1) == 3
    assert ">= 5" in error_of(lambda: s.optional_integer("n", lo=5)).problem


def test_present_null_is_not_the_default_for_a_required_type() -> None:
    s = Section({"samples": None, "flag": None}, PATH)
    assert error_of(lambda: s.integer("samples", 3)).key == f"{PATH}.samples"
    assert error_of(lambda: s.boolean("flag", False)).key == f"{PATH}.flag"


def test_strings() -> None:
    s = Section({"name": "x", "blank": "  ", "num": 5, "unset": None}, PATH)
    assert s.string("name") == "x" and s.string("absent", "dflt") == "dflt"
    for name in ("blank", "num", "absent"):
        err = error_of(lambda name=name: s.string(name))
        assert err.key == f"{PATH}.{name}" and "non-empty string" in err.problem
    assert s.optional_string("unset", "dflt") is None and s.optional_string("absent") is None
    assert s.optional_string("absent", "dflt") == "dflt"
    assert error_of(lambda: s.optional_string("blank")).key == f"{PATH}.blank"


def test_choice_returns_the_declared_option() -> None:
    s = Section({"mode": "rank", "bad": "fuzzy", "num": 1}, PATH)
    assert s.choice("mode", "drop", ("drop", "rank")) == "rank"
    assert s.choice("absent", "drop", ("drop", "rank")) == "drop"
    for name in ("bad", "num"):
        err = error_of(lambda name=name: s.choice(name, "drop", ("drop", "rank")))
        assert err.key == f"{PATH}.{name}" and "must be one of drop, rank" in err.problem


def test_http_urls() -> None:
    s = Section({"ok": "https://h:8/x", "ftp": "ftp://h", "nohost": "http://", "bare": "localhost:8000",
                 "num": 5, "unset": None}, PATH)
    assert s.http_url("ok") == "https://h:8/x"
    for name in ("ftp", "nohost", "bare"):
        err = error_of(lambda name=name: s.http_url(name))
        assert err.key == f"{PATH}.{name}" and "http:// or https:// URL" in err.problem
    assert error_of(lambda: s.http_url("num")).key == f"{PATH}.num"
    assert error_of(lambda: s.http_url("absent")).key == f"{PATH}.absent"
    assert s.optional_http_url("absent") is None and s.optional_http_url("unset") is None
    assert error_of(lambda: s.optional_http_url("ftp")).key == f"{PATH}.ftp"


def test_model_names_must_be_reachable() -> None:
    s = Section({"judge_model": "judge", "ghost": "ghost", "empty": "", "num": 3}, PATH)
    assert s.model("judge_model", CTX) == "judge" and s.model("absent", CTX) is None
    err = error_of(lambda: s.model("ghost", CTX))
    assert err.key == f"{PATH}.ghost" and "not in the models section" in err.problem
    for name in ("empty", "num"):
        assert "must be a model name" in error_of(lambda name=name: s.model(name, CTX)).problem
    # A `default` endpoint serves any model name.
    anywhere = OptionContext(path=PATH, models=frozenset({"default"}))
    assert s.model("ghost", anywhere) == "ghost"


def test_model_lists() -> None:
    s = Section({"ok": ["judge", "verifier"], "empty": [], "text": "judge", "twice": ["judge", "judge"],
                 "ghost": ["judge", "ghost"]}, PATH)
    assert s.model_list("ok", CTX) == ("judge", "verifier")
    for name in ("empty", "text", "absent"):
        err = error_of(lambda name=name: s.model_list(name, CTX))
        assert err.key == f"{PATH}.{name}" and "non-empty list of model names" in err.problem
    assert "lists a model twice" in error_of(lambda: s.model_list("twice", CTX)).problem
    assert error_of(lambda: s.model_list("ghost", CTX)).key == f"{PATH}.ghost[1]"
