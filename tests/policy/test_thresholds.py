"""Thresholds from costs: the rule on a score calibrated per task at the task's prior, the
proposal's presets, the config's three forms, the τ per task the shipped model's priors give,
and check-config showing the τ in force. The priors are read from the manifest (never written
here): a refit that moves them leaves these tests standing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from truthlens.detector.calibration.probability import task_priors
from truthlens.detector.manifest import DEFAULT_MODEL_DIR
from truthlens.detector.prompt import SHAPES
from truthlens.gateway.policy.config import parse_config
from truthlens.gateway.policy.thresholds import PRESETS, TASK_NAMES, proposal_tau, tau
from truthlens.options import ConfigError

SHIPPED = task_priors(DEFAULT_MODEL_DIR)


def _route(threshold: Any) -> Any:
    cfg = parse_config({"version": 1, "decisions": [{"name": "d", "plugins": [
        {"type": "hallucination", "configuration": {"threshold": threshold}}]}]})
    return cfg.decisions[0].route


def _odds(p: float) -> float:
    return p / (1 - p)


@pytest.mark.parametrize("seed", range(4))
def test_the_rule_flags_where_the_posterior_under_the_routes_prior_pays(seed: int) -> None:
    # A score calibrated at the task's prior π_t has odds s/(1-s) = LR · odds(π_t); under the
    # route's prior π the posterior odds are LR · odds(π). Flagging pays above posterior 1/(1+λ).
    rng = np.random.default_rng(seed)
    for _ in range(50):
        lam, prior, task_prior = float(rng.uniform(0.05, 200)), float(rng.uniform(0.01, 0.99)), float(
            rng.uniform(0.01, 0.99))
        t = tau(lam, prior, task_prior)
        posterior_odds = _odds(t) / _odds(task_prior) * _odds(prior)
        assert posterior_odds / (1 + posterior_odds) == pytest.approx(1 / (1 + lam))
        # Without a route prior the traffic is the task's own: τ = 1/(1+λ), whatever π_t.
        assert tau(lam, None, task_prior) == pytest.approx(1 / (1 + lam))
        assert tau(lam, task_prior, task_prior) == pytest.approx(1 / (1 + lam))
        # Rarer hallucinations in the traffic than in the dev answers ask for more evidence.
        assert (tau(lam, prior, task_prior) > 1 / (1 + lam)) == (prior < task_prior)


def test_a_score_without_task_priors_is_read_as_calibrated_on_balanced_classes() -> None:
    for lam, prior in [(10, 0.1), (1, 0.5), (0.3, 0.3), (50, 0.02)]:
        assert tau(lam, prior) == pytest.approx(1 / (1 + lam * prior / (1 - prior)))
        assert tau(lam, prior) == pytest.approx(tau(lam, prior, 0.5))
    assert tau(10, 0.1) == pytest.approx(0.4737, abs=1e-4)
    assert proposal_tau(10, 0.1) == pytest.approx(0.011, abs=1e-3)  # the proposal as written


def test_the_shipped_model_gives_a_prior_per_task() -> None:
    assert SHIPPED is not None and set(SHIPPED) == set(SHAPES)
    assert all(0 < p < 1 for p in SHIPPED.values())


def test_presets_keep_lambda_in_the_proposals_range_and_the_tables_prior() -> None:
    assert SHIPPED is not None
    for name, preset in PRESETS.items():
        lo, hi = preset.proposal_range
        assert lo <= preset.miss_cost <= hi, name
        route = _route(name)
        assert route.threshold_basis == name
        # The τ in force per task: the table's π = 0.1 against each task's own prior.
        assert dict(route.task_thresholds) == {
            shape: pytest.approx(tau(preset.miss_cost, 0.1, p), abs=1e-4) for shape, p in SHIPPED.items()}
        # On a score calibrated on balanced classes (the table's reading) medicine and finance
        # land inside the table's τ; support and creative cannot at π = 0.1.
        assert route.threshold == pytest.approx(tau(preset.miss_cost, 0.1), abs=1e-4)
    assert 0.3 <= _route("medical").threshold <= 0.5 and 0.4 <= _route("finance").threshold <= 0.6
    assert _route("support").threshold > 0.7 and _route("creative").threshold > 0.9


def test_costs_and_numbers() -> None:
    assert SHIPPED is not None
    route = _route({"miss_cost": 4, "prior": 0.2})
    assert route.threshold_basis == "miss_cost=4,prior=0.2"
    assert dict(route.task_thresholds) == {s: pytest.approx(tau(4, 0.2, p), abs=1e-4) for s, p in SHIPPED.items()}
    # The task whose dev answers are hallucinated most often asks for the most evidence.
    most = max(SHIPPED, key=lambda s: SHIPPED[s])
    assert route.for_task(most).threshold == max(route.task_thresholds.values())
    assert route.for_task(most).threshold_basis == route.threshold_basis
    medical = _route({"preset": "medical", "prior": 0.3})
    assert dict(medical.task_thresholds) == {s: pytest.approx(tau(13.5, 0.3, p), abs=1e-4) for s, p in SHIPPED.items()}
    # Costs without a prior: the traffic is each task's own, one τ = 1/(1+λ) for every task.
    plain = _route({"miss_cost": 4})
    assert plain.threshold == pytest.approx(0.2) and not plain.task_thresholds
    assert plain.threshold_basis == "miss_cost=4" and plain.for_task("record") is plain
    # A number is a risk on the one scale: the same for every task.
    assert _route(0.42).threshold == 0.42 and _route(0.42).threshold_basis == "" and not _route(0.42).task_thresholds
    assert all(_route(0.42).for_task(s).threshold == 0.42 for s in SHAPES)


def _model_dir(tmp_path: Path, edit: Any) -> Path:
    """The shipped model's directory with its manifest edited (``edit`` changes the parsed JSON)."""
    directory = tmp_path / "model"
    directory.mkdir()
    for entry in DEFAULT_MODEL_DIR.iterdir():
        if entry.name != "manifest.json":
            (directory / entry.name).symlink_to(entry.resolve())
    raw = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text())
    edit(raw)
    (directory / "manifest.json").write_text(json.dumps(raw))
    return directory


def _config(model: Path | None = None, **detector: Any) -> dict[str, Any]:
    det = {"model": str(model)} if model is not None else {}
    return {"version": 1, "detector": {**det, **detector}, "decisions": [{"name": "d", "plugins": [
        {"type": "hallucination", "configuration": {"threshold": {"miss_cost": 4, "prior": 0.2}}}]}]}


def test_a_model_without_the_calibrated_verdict_reads_as_balanced(tmp_path: Path) -> None:
    # The span rule's score is not calibrated per task: one τ, the balanced-class rule.
    route = parse_config(_config(_model_dir(tmp_path, lambda raw: raw.pop("verdict")))).decisions[0].route
    assert route is not None and not route.task_thresholds
    assert route.threshold == pytest.approx(tau(4, 0.2, 0.5), abs=1e-4)


def test_a_bad_probability_block_fails_the_config_naming_the_key(tmp_path: Path) -> None:
    def broken(raw: dict[str, Any]) -> None:
        raw["verdict"]["probability"]["tasks"]["record"]["prior"] = 1.5

    with pytest.raises(ConfigError) as err:
        parse_config(_config(_model_dir(tmp_path, broken)))
    assert err.value.key == "detector.model_dir"
    assert "'verdict.probability.tasks.record': 'prior' must be in (0, 1)" in str(err.value)


@pytest.mark.parametrize(("value", "key", "fragment"), [
    ("strict", "threshold", "no preset"),
    ({"prior": 0.1}, "threshold.miss_cost", "required"),
    ({"miss_cost": 0}, "threshold.miss_cost", "> 0"),
    ({"miss_cost": 2, "prior": 1}, "threshold.prior", "below 1"),
    ({"miss_cost": 2, "prior": 0}, "threshold.prior", "above 0"),
    ({"miss_cost": 2, "cost": 1}, "threshold.cost", "unknown key"),
    ({"preset": "legal"}, "threshold.preset", "unknown preset"),
    (True, "threshold", "must be a number"),
])
def test_bad_thresholds_name_the_key(value: Any, key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        _route(value)
    assert err.value.key == f"decisions[0].plugins[0].configuration.{key}" and fragment in str(err.value)


def test_check_config_shows_the_tau_in_force_per_task(tmp_path: Path) -> None:
    assert SHIPPED is not None
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "decisions": [
        {"name": "clinic", "plugins": [{"type": "hallucination", "configuration": {"threshold": "medical"}}]},
        {"name": "plain", "plugins": [{"type": "hallucination", "configuration": {"threshold": {"miss_cost": 3}}}]},
    ]}))
    out = subprocess.run([sys.executable, "-m", "truthlens", "check-config", str(path)], capture_output=True,
                         text=True, check=True).stdout
    per_task = ", ".join(f"{TASK_NAMES[s]} {round(tau(13.5, 0.1, p), 4):g}" for s, p in SHIPPED.items())
    assert f"  clinic: threshold {per_task} (medical)" in out
    assert "  plain: threshold 0.25 (miss_cost=3)" in out  # 1/(1+λ): the same for every task


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
