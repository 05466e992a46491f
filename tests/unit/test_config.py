"""Configuration: the shipped file loads; every error names its key path; the decision's
configuration merges over the global section (mode options through the mode module);
ConfigStore swaps atomically, rejects a bad file (logged, counted, old config kept) and pins
snapshots. Real YAML files in a temp dir; nothing is scripted."""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.policy.config import load_config, parse_config
from truthlens.gateway.policy.config_store import ConfigStore
from truthlens.modes import registry
from truthlens.options import ConfigError

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "configs" / "config.yaml"


def base() -> dict[str, Any]:
    return yaml.safe_load(SHIPPED.read_text())


def error_of(doc: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    return info.value


def test_shipped_config_loads() -> None:
    cfg = load_config(SHIPPED)
    assert cfg.version == 1 and len(cfg.digest) == 12 and cfg.source == str(SHIPPED)
    # One decision per API the gateway reads: chat completions, the Responses API and the legacy
    # completions API, the same policy.
    assert [d.name for d in cfg.decisions] == ["chat_completions", "responses", "completions"]
    chat, responses, completions = (d.route for d in cfg.decisions)
    assert responses == chat == completions
    policy = chat
    assert policy is not None
    assert policy.mode == "lightweight" and policy.actions == {"header", "body"}
    assert policy.streaming == "passthrough"  # auto: lightweight without block
    assert policy.budgets.detection_s == 5.0 and policy.budgets.total_s == 120.0
    assert policy.context.extension_field == "truthlens_context"
    assert policy.warning.position == "prepend"
    assert cfg.detector.model_dir is None and cfg.detector.max_batch_size == 8
    assert cfg.detector.chunk_aggregation == "grounded"
    assert cfg.detector.token_threshold is None  # the model's calibrated threshold
    assert cfg.models["default"].api_key_env == "OPENAI_API_KEY"
    with pytest.raises(TypeError):
        cfg.models["x"] = cfg.models["default"]  # type: ignore[index]


@pytest.mark.parametrize("name", sorted(str(p.relative_to(REPO)) for p in (REPO / "configs").rglob("*.yaml")))
def test_every_shipped_config_file_loads(name: str) -> None:
    cfg = load_config(REPO / name)
    assert cfg.decisions
    assert all(d.route is None or d.route.streaming in ("passthrough", "hold") for d in cfg.decisions)


@pytest.mark.parametrize(
    ("mutate", "key", "fragment"),
    [
        (lambda d: d.update(version=2), "version", "unsupported schema version"),
        (lambda d: d.update(extra=1), "extra", "unknown key"),
        (lambda d: d["hallucination"].update(threshold=1.5), "hallucination.threshold", "<= 1.0"),
        (lambda d: d["hallucination"].update(threshold="high"), "hallucination.threshold", "must be a number"),
        (lambda d: d["hallucination"].update(actions=["header", "shout"]),
         "hallucination.actions[1]", "unknown action"),
        (lambda d: d["hallucination"].update(fail_policy="maybe"), "hallucination.fail_policy", "open, closed"),
        (lambda d: d["hallucination"]["budgets"].update(detection_mss=1),
         "hallucination.budgets.detection_mss", "unknown key"),
        (lambda d: d["hallucination"]["budgets"].update(detection_ms=200000),
         "hallucination.budgets.detection_ms", "total_ms"),
        (lambda d: d["hallucination"]["context"].update(tool_messages="yes"),
         "hallucination.context.tool_messages", "true or false"),
        (lambda d: d["hallucination"].update(default_mode="turbo"),
         "hallucination.default_mode", "unknown mode 'turbo'"),
        (lambda d: d["detector"].update(provider="tpu"), "detector.provider", "auto, cpu, cuda"),
        (lambda d: d["detector"].update(token_threshold="calibrated"), "detector.token_threshold", "must be a number"),
        (lambda d: d["detector"].update(chunk_aggregation="mean"),
         "detector.chunk_aggregation", "grounded, max, min, best"),
        (lambda d: d["detector"]["batching"].update(max_batch_size=0), "detector.batching.max_batch_size", ">= 1"),
        (lambda d: d["models"]["default"].update(api_key="sk-live-abc123"), "models.default.api_key", "api_key_env"),
        (lambda d: d["models"]["default"].update(api_key_env="sk-live-abc123"),
         "models.default.api_key_env", "name of an environment variable"),
        (lambda d: d["models"]["default"].update(base_url="localhost:8000"), "models.default.base_url", "http"),
        (lambda d: d["models"]["default"].update(timeout_s=0), "models.default.timeout_s", "> 0"),
        (lambda d: d["decisions"].insert(1, copy.deepcopy(d["decisions"][0])),
         "decisions[1].name", "duplicate decision name"),
        (lambda d: d["decisions"][0]["rules"]["conditions"][0].update(type="domian"),
         "decisions[0].rules.conditions[0].type",
         "unknown condition type 'domian' (expected one of domain, header, keyword, model, path)"),
        (lambda d: d["decisions"][0]["plugins"][0].update(type="pii"),
         "decisions[0].plugins[0].type", "unknown plugin type"),
        (lambda d: d["decisions"][0]["plugins"][0]["configuration"].update(max_iterations=3),
         "decisions[0].plugins[0].configuration.max_iterations", "lightweight mode takes no options"),
        (lambda d: d["decisions"][0]["plugins"][0]["configuration"].update(mode="premiun"),
         "decisions[0].plugins[0].configuration.mode", "unknown mode 'premiun'"),
        (lambda d: d["decisions"][0]["plugins"][0]["configuration"].update(streaming="passthrough", actions=["block"]),
         "decisions[0].plugins[0].configuration.streaming", "block action"),
        (lambda d: d["decisions"][0]["plugins"][0]["configuration"].update(evidence={"enabled": True, "mode": "fuzzy"}),
         "decisions[0].plugins[0].configuration.evidence.mode", "drop, rank"),
        (lambda d: d["decisions"][0].update(priority="high"), "decisions[0].priority", "integer"),
    ],
)
def test_errors_name_the_key(mutate: Any, key: str, fragment: str) -> None:
    doc = base()
    mutate(doc)
    err = error_of(doc)
    assert err.key == key, str(err)
    assert fragment in str(err)
    assert "sk-live-abc123" not in str(err)  # a key-looking value is never echoed


def test_decision_configuration_merges_over_the_global_section() -> None:
    doc = base()
    doc["hallucination"].update(threshold=0.7, fail_policy="closed")
    doc["hallucination"]["budgets"] = {"detection_ms": 1000, "total_ms": 30000}
    doc["decisions"][0]["plugins"][0]["configuration"] = {
        "threshold": 0.3,
        "actions": ["header", "block"],
        "budgets": {"total_ms": 9000},  # detection_ms still comes from the global section
        "context": {"system_messages": True},
        "evidence": {"enabled": True, "min_gate": 0.4, "max_passages": 3},
    }
    policy = parse_config(doc).decisions[0].route
    assert policy is not None
    assert policy.threshold == 0.3 and policy.fail_policy == "closed"
    assert policy.budgets.detection_s == 1.0 and policy.budgets.total_s == 9.0
    assert policy.context.system_messages and policy.context.tool_messages
    assert policy.streaming == "hold"  # auto + block
    assert policy.evidence is not None
    assert (policy.evidence.min_gate, policy.evidence.max_passages, policy.evidence.mode) == (0.4, 3, "drop")


def test_mode_options_come_from_the_global_mode_section_and_the_decision() -> None:
    doc = base()
    doc["hallucination"]["standard"] = {"max_iterations": 4, "convergence_threshold": 0.4}
    doc["decisions"][0]["plugins"][0]["configuration"] = {"mode": "standard", "max_iterations": 2}
    policy = parse_config(doc).decisions[0].route
    assert policy is not None and policy.mode == "standard" and policy.streaming == "hold"
    assert policy.options.max_iterations == 2
    assert policy.options.convergence_threshold == 0.4
    doc["hallucination"]["standard"]["max_iterations"] = 99
    err = error_of(doc)
    assert err.key.startswith("hallucination.standard")


MODE_OPTIONS: dict[str, dict[str, Any]] = {"premium": {"verification_models": ["default"]}}  # premium's required key


def with_mode(mode: str, **configuration: Any) -> dict[str, Any]:
    doc = base()
    doc["decisions"][0]["plugins"][0]["configuration"] = {
        "mode": mode, "actions": ["header", "body"], **MODE_OPTIONS.get(mode, {}), **configuration}
    return doc


def test_each_mode_declares_whether_it_rewrites_answers() -> None:
    declared = {m: registry.load_mode_module(m).REWRITES for m in registry.mode_names()}
    assert declared == {"lightweight": False, "standard": True, "premium": True, "acr": True, "auto": True,
                        "adaptive": True}


@pytest.mark.parametrize("mode", registry.mode_names())
def test_streaming_auto_holds_exactly_the_modes_that_rewrite(mode: str) -> None:
    policy = parse_config(with_mode(mode, streaming="auto")).decisions[0].route
    assert policy is not None and policy.mode == mode
    assert policy.streaming == ("hold" if registry.load_mode_module(mode).REWRITES else "passthrough")
    if registry.load_mode_module(mode).REWRITES:
        err = error_of(with_mode(mode, streaming="passthrough"))
        assert err.key == "decisions[0].plugins[0].configuration.streaming"
        assert f"mode {mode!r} rewrites answers" in str(err)
    else:
        passthrough = parse_config(with_mode(mode, streaming="passthrough")).decisions[0].route
        assert passthrough is not None and passthrough.streaming == "passthrough"


def test_streaming_follows_the_modules_rewrites_flag_not_the_mode_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry.load_mode_module("lightweight"), "REWRITES", True)
    policy = parse_config(with_mode("lightweight")).decisions[0].route
    assert policy is not None and policy.streaming == "hold"
    assert "mode 'lightweight' rewrites answers" in str(error_of(with_mode("lightweight", streaming="passthrough")))
    monkeypatch.setattr(registry.load_mode_module("standard"), "REWRITES", False)
    policy = parse_config(with_mode("standard")).decisions[0].route
    assert policy is not None and policy.streaming == "passthrough"


def test_the_global_default_mode_resolves_streaming_too() -> None:
    doc = base()
    doc["hallucination"]["default_mode"] = "standard"
    assert parse_config(doc).hallucination.streaming == "hold"


@pytest.mark.parametrize(("mode", "option", "wrong"), [
    ("standard", "max_iterations", "three"),
    ("standard", "refine_temperature", True),
    ("premium", "require_consensus", "yes"),
    ("acr", "samples", 2.5),
    ("acr", "retriever_url", 8080),
    ("auto", "expert_threshold", "high"),
])
def test_a_wrong_mode_option_type_is_a_config_error_naming_the_key(mode: str, option: str, wrong: Any) -> None:
    assert error_of(with_mode(mode, **{option: wrong})).key == f"decisions[0].plugins[0].configuration.{option}"
    doc = base()
    doc["hallucination"][mode] = {**MODE_OPTIONS.get(mode, {}), option: wrong}
    assert error_of(doc).key == f"hallucination.{mode}.{option}"


def test_unset_optional_config_values() -> None:
    doc = base()
    doc["hallucination"]["context"]["extension_field"] = None  # null: no extension field
    doc["hallucination"]["evidence"] = {"enabled": True, "max_passages": None}
    doc["models"]["default"]["api_key_env"] = None
    cfg = parse_config(doc)
    assert cfg.hallucination.context.extension_field is None and cfg.models["default"].api_key_env is None
    assert cfg.hallucination.evidence is not None and cfg.hallucination.evidence.max_passages is None
    doc["hallucination"]["evidence"]["max_passages"] = 0
    assert error_of(doc).key == "hallucination.evidence.max_passages"


def test_disabled_decision_has_no_policy_but_is_validated() -> None:
    doc = base()
    doc["decisions"][0]["plugins"][0]["configuration"] = {"enabled": False}
    assert parse_config(doc).decisions[0].route is None
    doc["decisions"][0]["plugins"][0]["configuration"] = {"enabled": False, "threshold": 3}
    assert error_of(doc).key == "decisions[0].plugins[0].configuration.threshold"


def test_global_switch_is_the_default_a_decision_can_override() -> None:
    doc = base()
    doc["hallucination"]["enabled"] = False
    doc["decisions"][0]["plugins"][0]["configuration"].pop("enabled")
    cfg = parse_config(doc)
    assert cfg.hallucination.enabled is False and cfg.decisions[0].route is None
    doc["decisions"][0]["plugins"][0]["configuration"]["enabled"] = True
    assert parse_config(doc).decisions[0].route is not None


def test_yaml_problems(tmp_path: Path) -> None:
    dup = tmp_path / "dup.yaml"
    dup.write_text("version: 1\nversion: 1\n")
    with pytest.raises(ConfigError, match="duplicate key 'version'"):
        load_config(dup)
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: [1\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(broken)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
    assert error_of(["a list"]).key == "(root)"


def test_relative_model_dir_is_anchored_at_the_config_file(tmp_path: Path) -> None:
    doc = base()
    doc["detector"]["model"] = "models/detector"
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert load_config(path).detector.model_dir == str(tmp_path / "models" / "detector")


@pytest.mark.parametrize(("key", "set_nan"), [
    ("hallucination.threshold", lambda d: d["hallucination"].update(threshold=float("nan"))),
    ("hallucination.budgets.total_ms", lambda d: d["hallucination"]["budgets"].update(total_ms=float("nan"))),
    ("hallucination.budgets.detection_ms", lambda d: d["hallucination"]["budgets"].update(detection_ms=float("inf"))),
    ("decisions[0].plugins[0].configuration.threshold",
     lambda d: d["decisions"][0]["plugins"][0]["configuration"].update(threshold=float("nan"))),
    ("detector.batching.max_wait_ms", lambda d: d["detector"]["batching"].update(max_wait_ms=float("nan"))),
    ("models.default.timeout_s", lambda d: d["models"]["default"].update(timeout_s=float("nan"))),
])
def test_nan_and_infinity_are_refused_on_float_keys_of_every_section_naming_the_key(key: str, set_nan: Any) -> None:
    # Adversarial round 3, N54: `threshold: .nan` passed check-config and reloads, and then every
    # check was invalid_input (block routes released everything); `total_ms: .nan` made every
    # check budget_exhausted.
    doc = base()
    set_nan(doc)
    err = error_of(doc)
    assert err.key == key and "finite" in err.problem


@pytest.mark.parametrize("field", ["messages", "model", "stream", "tools", "n", "input", "instructions",
                                   "previous_response_id"])
@pytest.mark.parametrize("where", ["hallucination", "decision"])
def test_an_extension_field_that_names_a_request_field_of_the_api_is_refused(field: str, where: str) -> None:
    # Adversarial round 4, CF1: `extension_field: messages` passed and then stripped `messages`
    # from every request.
    doc = base()
    section = doc["hallucination"] if where == "hallucination" else doc["decisions"][0]["plugins"][0]["configuration"]
    section["context"] = {"extension_field": field}
    err = error_of(doc)
    assert err.key.endswith("context.extension_field") and f"{field!r} is a field of the" in err.problem, err


def test_an_extension_field_of_its_own_is_accepted() -> None:
    doc = base()
    doc["hallucination"]["context"] = {"extension_field": "acme_passages"}
    assert parse_config(doc).hallucination.context.extension_field == "acme_passages"


def test_check_config_and_reload_refuse_a_nan_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from truthlens import cli

    path = tmp_path / "config.yaml"
    path.write_text(SHIPPED.read_text())
    store = ConfigStore(path, telemetry=(t := telemetry()))
    good = store.current
    path.write_text(re.sub(r"(?m)^  threshold: [0-9.]+", "  threshold: .nan", SHIPPED.read_text(), count=1))
    assert cli.main(["check-config", str(path)]) == 1
    assert "hallucination.threshold: must be a finite number" in capsys.readouterr().err
    assert store.reload() is False and store.current is good and reloads(t, "rejected") == 1


# ---------------------------------------------------------------- hot reload


def telemetry() -> Telemetry:
    return Telemetry(registry=CollectorRegistry(), tracer_provider=TracerProvider())


def reloads(t: Telemetry, result: str) -> float:
    return t.registry.get_sample_value("truthlens_config_reloads_total", {"result": result}) or 0.0


def write(path: Path, doc: dict[str, Any]) -> None:
    # Write then rename: a watcher never reads a half-written file.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(doc, allow_unicode=True))
    os.replace(tmp, path)


def test_reload_swaps_and_pinned_snapshots_stay(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "config.yaml"
    doc = base()
    write(path, doc)
    t = telemetry()
    store = ConfigStore(path, telemetry=t)
    pinned = store.current
    assert store.reload() is False  # unchanged content

    doc["hallucination"]["threshold"] = 0.9
    doc["decisions"][0]["plugins"][0]["configuration"]["threshold"] = 0.8
    write(path, doc)
    assert store.reload() is True
    assert store.current is not pinned and store.current.digest != pinned.digest
    assert store.current.decisions[0].route.threshold == 0.8  # type: ignore[union-attr]
    assert pinned.decisions[0].route.threshold == base()["hallucination"]["threshold"]  # type: ignore[union-attr]
    assert reloads(t, "applied") == 1

    good = store.current
    doc["decisions"][0]["rules"]["conditions"][0]["type"] = "domian"
    write(path, doc)
    with caplog.at_level(logging.ERROR, logger="truthlens.gateway.policy.config"):
        assert store.reload() is False
    assert store.current is good
    assert reloads(t, "rejected") == 1
    assert "decisions[0].rules.conditions[0].type" in caplog.text

    doc["decisions"][0]["rules"]["conditions"][0]["type"] = "path"
    doc["detector"]["token_threshold"] = 0.6
    write(path, doc)
    with caplog.at_level(logging.WARNING, logger="truthlens.gateway.policy.config"):
        assert store.reload() is True
    assert "after a restart" in caplog.text


async def test_watch_picks_up_changes_and_survives_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    doc = base()
    write(path, doc)
    t = telemetry()
    store = ConfigStore(path, telemetry=t)
    task = asyncio.create_task(store.watch(interval_s=0.02))
    try:
        path.write_text("version: [")  # invalid: rejected, old config stays
        await _until(lambda: reloads(t, "rejected") >= 1)
        assert store.current.decisions[0].name == "chat_completions"
        doc["decisions"][0]["name"] = "renamed"
        write(path, doc)
        await _until(lambda: store.current.decisions[0].name == "renamed")
        assert reloads(t, "applied") == 1
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_file_rewritten_in_place_is_applied_only_once_it_stays_unchanged_for_a_poll(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Adversarial round 3, N55: a config rewritten in place, the watcher's poll landing between the
    # two writes, applied the first half (a valid config without the second decision). The polls
    # are driven one by one here (the watcher's sleep waits for the test), so no timing decides.
    path = tmp_path / "config.yaml"
    doc = base()
    write(path, doc)
    store = ConfigStore(path, telemetry=(t := telemetry()))
    full = SHIPPED.read_text().replace("name: chat_completions", "name: chat_rewritten")
    half = full[: full.index("  - name: responses")]  # valid on its own: one decision
    assert [d.name for d in parse_config(yaml.safe_load(half)).decisions] == ["chat_rewritten"]

    ticks: asyncio.Queue[None] = asyncio.Queue()
    waiting: asyncio.Queue[None] = asyncio.Queue()

    async def one_poll_at_a_time(_seconds: float) -> None:
        waiting.put_nowait(None)
        await ticks.get()

    async def poll() -> None:
        """Let the watcher run one poll to its end (its next sleep)."""
        ticks.put_nowait(None)
        await waiting.get()

    from truthlens.gateway.policy import config_store
    monkeypatch.setattr(config_store.asyncio, "sleep", one_poll_at_a_time)
    task = asyncio.create_task(store.watch(interval_s=2.0))
    try:
        await waiting.get()
        with path.open("r+", encoding="utf-8") as f:  # in place: same inode, truncated, half written
            f.truncate(0)
            f.write(half)
            f.flush()
            os.fsync(f.fileno())
        await poll()
        assert store.current.decisions[0].name == "chat_completions"  # not the half
        with path.open("a", encoding="utf-8") as f:
            f.write(full[len(half):])
        await poll()
        assert store.current.decisions[0].name == "chat_completions"  # changed since the last poll
        await poll()
        assert [d.name for d in store.current.decisions] == ["chat_rewritten", "responses", "completions"]
        assert reloads(t, "applied") == 1
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def _until(cond: Any, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not cond():
            await asyncio.sleep(0.01)


def test_a_bad_file_at_start_is_fatal(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("version: 2\n")
    with pytest.raises(ConfigError, match="version"):
        ConfigStore(path)


def test_a_models_reply_bound_is_read_and_checked() -> None:
    base = "version: 1\nmodels:\n  judge:\n    base_url: http://127.0.0.1:8000/v1\n"
    assert parse_config(yaml.safe_load(base)).models["judge"].max_reply_bytes == 8 << 20
    assert parse_config(yaml.safe_load(base + "    max_reply_bytes: 65536\n")).models["judge"].max_reply_bytes == 65536
    with pytest.raises(ConfigError, match=r"models\.judge\.max_reply_bytes"):
        parse_config(yaml.safe_load(base + "    max_reply_bytes: 10\n"))


@pytest.mark.parametrize("mode", registry.mode_names())
def test_streaming_progressive_is_for_modes_that_do_not_rewrite(mode: str) -> None:
    if registry.load_mode_module(mode).REWRITES:
        err = error_of(with_mode(mode, streaming="progressive"))
        assert err.key == "decisions[0].plugins[0].configuration.streaming"
        assert f"progressive cannot be used with mode {mode!r}" in str(err)
    else:
        policy = parse_config(with_mode(mode, streaming="progressive", actions=["header", "block"])).decisions[0].route
        assert policy is not None and policy.streaming == "progressive"
    err = error_of(with_mode(mode, streaming="progresive"))
    assert "auto, passthrough, hold, progressive" in str(err)
