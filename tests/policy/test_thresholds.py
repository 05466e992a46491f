"""Thresholds from costs: the formula, the proposal's presets, the config's three forms, and
check-config showing the τ in force."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens.gateway.policy.config import parse_config
from truthlens.gateway.policy.thresholds import PRESETS, proposal_tau, tau
from truthlens.options import ConfigError


def _route(threshold: Any) -> Any:
    cfg = parse_config({"version": 1, "decisions": [{"name": "d", "plugins": [
        {"type": "hallucination", "configuration": {"threshold": threshold}}]}]})
    return cfg.decisions[0].route


def test_the_formula_is_the_expected_cost_rule() -> None:
    # Flag when P(h | s) > 1/(1+λ): with a balanced-calibrated s the posterior odds are s/(1-s)·π/(1-π).
    for lam, prior in [(10, 0.1), (1, 0.5), (0.3, 0.3), (50, 0.02)]:
        t = tau(lam, prior)
        odds = t / (1 - t) * prior / (1 - prior)
        assert odds / (1 + odds) == pytest.approx(1 / (1 + lam))
    assert tau(10, 0.1) == pytest.approx(0.4737, abs=1e-4)
    assert proposal_tau(10, 0.1) == pytest.approx(0.011, abs=1e-3)  # the proposal as written


def test_presets_keep_lambda_in_the_proposals_range() -> None:
    for name, preset in PRESETS.items():
        lo, hi = preset.proposal_range
        assert lo <= preset.miss_cost <= hi, name
        route = _route(name)
        assert route.threshold == pytest.approx(tau(preset.miss_cost, 0.1), abs=1e-4)
        assert route.threshold_basis == name
    # Medicine and finance land inside the table's τ; support and creative cannot at π = 0.1.
    assert 0.3 <= _route("medical").threshold <= 0.5 and 0.4 <= _route("finance").threshold <= 0.6
    assert _route("support").threshold > 0.7 and _route("creative").threshold > 0.9


def test_costs_and_numbers() -> None:
    route = _route({"miss_cost": 4, "prior": 0.2})
    assert route.threshold == pytest.approx(tau(4, 0.2), abs=1e-4) and route.threshold_basis == "miss_cost=4,prior=0.2"
    assert _route({"preset": "medical", "prior": 0.3}).threshold == pytest.approx(tau(13.5, 0.3), abs=1e-4)
    assert _route(0.42).threshold == 0.42 and _route(0.42).threshold_basis == ""


@pytest.mark.parametrize(("value", "key", "fragment"), [
    ("strict", "threshold", "no preset"),
    ({"prior": 0.1}, "threshold.miss_cost", "required"),
    ({"miss_cost": 0}, "threshold.miss_cost", "> 0"),
    ({"miss_cost": 2, "prior": 1}, "threshold.prior", "below 1"),
    ({"miss_cost": 2, "cost": 1}, "threshold.cost", "unknown key"),
    ({"preset": "legal"}, "threshold.preset", "unknown preset"),
    (True, "threshold", "must be a number"),
])
def test_bad_thresholds_name_the_key(value: Any, key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        _route(value)
    assert err.value.key == f"decisions[0].plugins[0].configuration.{key}" and fragment in str(err.value)


def test_check_config_shows_the_tau_in_force(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "decisions": [{"name": "clinic", "plugins": [
        {"type": "hallucination", "configuration": {"threshold": "medical"}}]}]}))
    out = subprocess.run([sys.executable, "-m", "truthlens", "check-config", str(path)], capture_output=True,
                         text=True, check=True).stdout
    assert "  clinic: threshold 0.4 (medical)" in out


def test_the_policy_pages_examples_load() -> None:
    """docs/policy.md's YAML: the domains example, each threshold form, the adaptive route."""
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "policy.md").read_text(encoding="utf-8")
    domains, thresholds, adaptive = (yaml.safe_load(b) if i != 1 else b
                                     for i, b in enumerate(re.findall(r"```yaml\n(.*?)```", text, re.S)[:3]))
    assert parse_config({"version": 1, **domains}).decisions[0].route is not None
    for line in thresholds.splitlines():
        assert 0 < _route(yaml.safe_load(line.split("#")[0])["threshold"]).threshold < 1
    models = {m: {"base_url": "http://127.0.0.1:9/v1"} for m in ("verifier-a", "verifier-b")}
    cfg = parse_config({"version": 1, "models": models, "decisions": [
        {"name": "a", "plugins": [{"type": "hallucination", "configuration": adaptive["configuration"]}]}]})
    assert cfg.decisions[0].route is not None and cfg.decisions[0].route.options.arms == (
        "lightweight", "standard", "premium")
