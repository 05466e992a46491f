"""``mode: auto`` option parsing: stage options parsed by their own modes, key paths in errors.
Nothing scripted."""

from __future__ import annotations

import pytest

from truthlens.modes.acr.mode import AcrOptions
from truthlens.modes.escalation.auto import AutoOptions, parse_options
from truthlens.modes.premium import PremiumOptions
from truthlens.modes.standard import StandardOptions
from truthlens.options import ConfigError, OptionContext

CTX = OptionContext(path="decisions[0].plugins[0].configuration",
                    models=frozenset({"default", "expert", "verifier"}))


def test_options() -> None:
    opts = parse_options({"expert_model": "expert", "expert_threshold": 0.5, "acr": {"samples": 4}}, CTX)
    assert opts.expert_model == "expert" and opts.expert_threshold == 0.5
    assert opts.acr.samples == 4 and opts.standard is not None and opts.premium is None
    with pytest.raises(ConfigError) as err:
        parse_options({"acr": {"samples": 1}}, CTX)
    assert err.value.key == f"{CTX.path}.acr.samples"
    with pytest.raises(ConfigError) as err:
        parse_options({"expert_model": "nowhere"}, OptionContext(path="p", models=frozenset({"x"})))
    assert err.value.key == "p.expert_model"
    with pytest.raises(ConfigError) as err:
        parse_options({"premium": {}}, CTX)
    assert err.value.key.startswith(f"{CTX.path}.premium")
    with pytest.raises(ConfigError) as err:
        parse_options({"escalate": True}, CTX)
    assert err.value.key == f"{CTX.path}.escalate"


def test_stage_options_are_typed_and_default_to_their_modes_defaults() -> None:
    opts = parse_options({}, CTX)
    assert opts == AutoOptions()
    assert opts.standard == StandardOptions() and opts.acr == AcrOptions() and opts.premium is None
    assert parse_options({"premium": None}, CTX).premium is None
    with_premium = parse_options({"premium": {"verification_models": ["verifier"]}}, CTX)
    assert isinstance(with_premium.premium, PremiumOptions)
    assert with_premium.premium.verification_models == ("verifier",)


@pytest.mark.parametrize("raw, key", [
    ({"expert_threshold": "low"}, "expert_threshold"),
    ({"expert_threshold": True}, "expert_threshold"),
    ({"expert_threshold": 1.5}, "expert_threshold"),  # a cosine
    ({"expert_max_tokens": 2.5}, "expert_max_tokens"),
    ({"expert_max_tokens": 0}, "expert_max_tokens"),
    ({"expert_model": 3}, "expert_model"),
    ({"standard": 5}, "standard"),
    ({"standard": {"max_iterations": "3"}}, "standard.max_iterations"),
    ({"acr": {"temperature": "hot"}}, "acr.temperature"),
    ({"premium": ["verifier"]}, "premium"),
    ({"premium": {"verification_models": "verifier"}}, "premium.verification_models"),
    ({"premium": {"verification_models": ["verifier"], "always_verify": "no"}}, "premium.always_verify"),
])
def test_a_wrong_option_type_is_a_config_error_naming_the_key(raw: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_options(raw, CTX)
    assert err.value.key == f"{CTX.path}.{key}"
