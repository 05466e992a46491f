"""``truthlens check-config`` says what a valid config leaves unchecked: one API checked and not the
other, and (``--envoy``) Envoy routes that differ from the ones the config needs. Real: the CLI,
the config loader and the route planner; no servers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


def check(tmp_path: Path, doc: dict[str, object], *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "truthlens", "check-config", "config.yaml", *extra], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)


def shipped() -> dict[str, object]:
    return dict(yaml.safe_load((REPO / "configs" / "config.yaml").read_text(encoding="utf-8")))


def test_a_config_that_checks_chat_but_not_responses_is_warned_about(tmp_path: Path) -> None:
    doc = shipped()
    doc["decisions"] = [d for d in doc["decisions"] if d["name"] != "responses"]  # type: ignore[attr-defined]
    done = check(tmp_path, doc)
    assert done.returncode == 0
    assert "warning: config.yaml: checks chat completions but no checked decision takes the Responses API " \
           "(/v1/responses)" in done.stderr
    assert check(tmp_path, shipped()).stderr == ""  # both checked: nothing to say


def test_envoy_routes_that_miss_a_detection_off_decision_are_warned_about(tmp_path: Path) -> None:
    doc = shipped()
    doc["decisions"].insert(0, {  # type: ignore[attr-defined]
        "name": "internal", "priority": 100,
        "rules": {"operator": "AND", "conditions": [{"type": "header", "name": "x-internal", "value": "1"}]},
        "plugins": [{"type": "hallucination", "configuration": {"enabled": False}}]})
    done = check(tmp_path, doc, "--envoy", str(REPO / "envoy.yaml"))
    assert done.returncode == 0
    assert 'decision "internal" is detection off, but no route skips the processor for it' in done.stderr
    assert "`truthlens envoy-routes` prints the routes this config needs" in done.stderr
    assert check(tmp_path, shipped(), "--envoy", str(REPO / "envoy.yaml")).stderr == ""


def _envoy_with_buffers(tmp_path: Path, listener: int | None, cluster: int | None) -> Path:
    doc = yaml.safe_load((REPO / "envoy.yaml").read_text(encoding="utf-8"))
    for resource, value in ((doc["static_resources"]["listeners"][0], listener),
                            (next(c for c in doc["static_resources"]["clusters"] if c["name"] == "llm_upstream"), cluster)):
        if value is None:
            resource.pop("per_connection_buffer_limit_bytes", None)  # Envoy's default: 1 MiB
        else:
            resource["per_connection_buffer_limit_bytes"] = value
    path = tmp_path / "envoy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_max_body_bytes_over_envoys_buffer_is_refused_naming_both(tmp_path: Path) -> None:
    # Adversarial round 4, CF11: 64 MiB against the shipped 8 MiB buffer passed; answers with a
    # Content-Length over 8 MiB then got Envoy's 500 (labelled processor_unreachable).
    doc = shipped()
    doc["hallucination"]["max_body_bytes"] = 64 * 1024 * 1024  # type: ignore[index]
    done = check(tmp_path, doc, "--envoy", str(REPO / "envoy.yaml"))
    assert done.returncode == 1 and ": ok" not in done.stdout
    assert "max_body_bytes 67108864 (of hallucination" in done.stderr
    assert "listener openai_listener has per_connection_buffer_limit_bytes 8388608" in done.stderr


def test_the_smallest_buffer_decides_a_cluster_or_envoys_default_included(tmp_path: Path) -> None:
    doc = shipped()
    # The cluster the routes send to has the smaller buffer.
    done = check(tmp_path, doc, "--envoy", str(_envoy_with_buffers(tmp_path, 8388608, 4194304)))
    assert done.returncode == 1 and "cluster llm_upstream has per_connection_buffer_limit_bytes 4194304" in done.stderr
    # Unset: Envoy's own default, 1 MiB, under the shipped 8 MiB.
    done = check(tmp_path, doc, "--envoy", str(_envoy_with_buffers(tmp_path, None, 8388608)))
    assert done.returncode == 1 and "per_connection_buffer_limit_bytes 1048576" in done.stderr
    # Limits that fit the buffer pass.
    small = shipped()
    small["hallucination"]["max_body_bytes"] = 1048576  # type: ignore[index]
    assert check(tmp_path, small, "--envoy", str(_envoy_with_buffers(tmp_path, None, None))).returncode == 0
    # Equal to the buffer (the shipped pair) is fine.
    assert check(tmp_path, shipped(), "--envoy", str(REPO / "envoy.yaml")).returncode == 0


def test_a_config_that_checks_chat_but_not_the_legacy_completions_api_is_warned_about(tmp_path: Path) -> None:
    doc = shipped()
    doc["decisions"] = [d for d in doc["decisions"] if d["name"] != "completions"]  # type: ignore[attr-defined]
    done = check(tmp_path, doc)
    assert done.returncode == 0
    assert "no checked decision takes the legacy completions API (/v1/completions)" in done.stderr
    assert "the Responses API" not in done.stderr  # still checked: one warning, for the API left out


def _shipped_envoy() -> tuple[dict[str, Any], dict[str, Any]]:
    """The shipped envoy.yaml, and its HTTP connection manager's config (to edit)."""
    doc = yaml.safe_load((REPO / "envoy.yaml").read_text(encoding="utf-8"))
    return doc, doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]


def _written(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "envoy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _assert_filter_refused(tmp_path: Path, key: str, values: tuple[object, ...], message: str) -> None:
    """check-config --envoy refuses the shipped envoy.yaml, naming ``message``, with its ext_proc
    filter's ``key`` removed (None) or set to each other value in turn."""
    doc, hcm = _shipped_envoy()
    (ext_proc,) = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.ext_proc"]
    for value in values:
        if value is None:
            ext_proc["typed_config"].pop(key, None)
        else:
            ext_proc["typed_config"][key] = value
        done = check(tmp_path, shipped(), "--envoy", str(_written(tmp_path, doc)))
        assert done.returncode == 1, value
        assert message in done.stderr


def test_an_ext_proc_filter_without_mode_overrides_is_refused(tmp_path: Path) -> None:
    # Envoy would ignore the phases the processor picks per exchange: with the shipped static mode
    # (response_body_mode NONE) no answer would reach the check.
    _assert_filter_refused(tmp_path, "allow_mode_override", (None, False),
                           "the ext_proc filter of listener openai_listener has no allow_mode_override: true")
    for shipped_envoy in ("envoy.yaml", "deploy/compose/envoy.yaml"):
        assert check(tmp_path, shipped(), "--envoy", str(REPO / shipped_envoy)).returncode == 0, shipped_envoy


def test_an_ext_proc_filter_that_drops_the_processors_metadata_is_refused(tmp_path: Path) -> None:
    # Envoy would drop the metadata that moves an unchecked exchange to the unmarked route: every
    # detection-off answer would leave marked unavailable.
    _assert_filter_refused(tmp_path, "metadata_options",
                           (None, {"receiving_namespaces": {"untyped": ["other"]}}, {"receiving_namespaces": {}}),
                           "does not list 'truthlens' in metadata_options.receiving_namespaces.untyped")


def test_envoy_routes_without_the_unmarked_route_for_unchecked_exchanges_are_warned_about(tmp_path: Path) -> None:
    # An envoy.yaml from before the processor moved unchecked exchanges off the marked routes:
    # its detection-off answers would keep the unavailable mark.
    doc, hcm = _shipped_envoy()
    host = hcm["route_config"]["virtual_hosts"][0]
    host["routes"] = [r for r in host["routes"] if r.get("name") != "processor:unchecked"]
    done = check(tmp_path, shipped(), "--envoy", str(_written(tmp_path, doc)))
    assert done.returncode == 0
    assert "no route before the marked ones matches the processor's unchecked metadata" in done.stderr
