"""The route option ``no_context: skip | check | block``: default skip, per decision over the
global section, validated at start-up naming its key. Nothing is scripted (the real loader)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from truthlens import starter
from truthlens.gateway.policy.config import parse_config
from truthlens.options import ConfigError


def doc(**decision_conf: Any) -> dict[str, Any]:
    d = yaml.safe_load(starter.CONFIG.read_text())
    d["decisions"][0]["plugins"][0]["configuration"].update(decision_conf)
    return d


def test_default_is_skip_and_a_decision_overrides_the_global_value() -> None:
    cfg = parse_config(doc())
    assert cfg.hallucination.no_context == "skip"
    assert cfg.decisions[0].route is not None and cfg.decisions[0].route.no_context == "skip"
    d = doc(no_context="block")
    d["hallucination"]["no_context"] = "check"
    cfg = parse_config(d)
    assert cfg.hallucination.no_context == "check"
    assert cfg.decisions[0].route is not None and cfg.decisions[0].route.no_context == "block"


def test_an_unknown_value_names_its_key() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(doc(no_context="ignore"))
    assert err.value.key == "decisions[0].plugins[0].configuration.no_context"
    assert "skip" in err.value.problem
