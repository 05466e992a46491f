"""``mode: auto`` option parsing: stage options parsed by their own modes, key paths in errors.
Nothing scripted."""

from __future__ import annotations

import pytest

from truthlens.modes.base import ConfigError, OptionContext
from truthlens.modes.escalation.auto import parse_options

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
