"""``mode: acr`` option parsing: defaults, bounds and key paths in errors. Nothing scripted."""

from __future__ import annotations

import pytest

from truthlens.modes.acr.mode import AcrOptions, parse_options
from truthlens.options import ConfigError, OptionContext

CTX = OptionContext(path="decisions[0].plugins[0].configuration", models=frozenset({"default", "judge"}))


def test_defaults_follow_the_paper() -> None:
    opts = parse_options({}, CTX)
    assert opts == AcrOptions()
    assert (opts.samples, opts.temperature, opts.top_p, opts.theta) == (3, 0.5, 0.8, 0.05)


def test_values_are_read() -> None:
    opts = parse_options({"samples": 5, "temperature": 0.7, "max_rounds": 3, "model": "judge",
                          "retriever_url": "http://127.0.0.1:18601/retrieve"}, CTX)
    assert (opts.samples, opts.temperature, opts.max_rounds, opts.model) == (5, 0.7, 3, "judge")
    assert opts.retriever_url == "http://127.0.0.1:18601/retrieve"


def test_prefer_defaults_to_fusion_and_reads_context() -> None:
    assert parse_options({}, CTX).prefer == "fusion"
    assert parse_options({"prefer": "context"}, CTX).prefer == "context"


@pytest.mark.parametrize("raw, key", [
    ({"samples": 1}, "samples"),  # calibration needs M >= 2
    ({"samples": 2.5}, "samples"),
    ({"temperature": "hot"}, "temperature"),
    ({"top_p": 0}, "top_p"),
    ({"max_rounds": True}, "max_rounds"),
    ({"retriever_url": "ftp://x"}, "retriever_url"),
    ({"retriever_url": 5}, "retriever_url"),
    ({"model": ""}, "model"),
    ({"sample": 3}, "sample"),
    ({"prefer": "memory"}, "prefer"),
])
def test_errors_name_the_key(raw: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_options(raw, CTX)
    assert err.value.key == f"{CTX.path}.{key}"


def test_model_must_be_reachable() -> None:
    ctx = OptionContext(path="p", models=frozenset({"judge"}))
    with pytest.raises(ConfigError, match="not in the models section"):
        parse_options({"model": "other"}, ctx)


@pytest.mark.parametrize("raw, key", [
    ({"samples": "3"}, "samples"),
    ({"samples": None}, "samples"),  # null is not "use the default"
    ({"temperature": None}, "temperature"),
    ({"top_p": True}, "top_p"),
    ({"max_tokens": 256.0}, "max_tokens"),
    ({"cluster_threshold": [0.8]}, "cluster_threshold"),
    ({"retriever_timeout_s": "5s"}, "retriever_timeout_s"),
    ({"model": 7}, "model"),
])
def test_a_wrong_option_type_is_a_config_error_naming_the_key(raw: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_options(raw, CTX)
    assert err.value.key == f"{CTX.path}.{key}"


def test_options_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError) as err:
        parse_options(["samples", 3], CTX)  # type: ignore[arg-type]
    assert err.value.key == CTX.path


def test_null_retriever_and_model_mean_not_set() -> None:
    assert parse_options({"retriever_url": None, "model": None}, CTX) == AcrOptions()
