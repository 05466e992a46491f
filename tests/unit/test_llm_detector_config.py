"""``detector.backend: llm``, ``detector.confirm`` and the routes' ``confirm`` key: parsed into
settings, every mistake named by its key, the example configs valid for ``truthlens
check-config``, and the cascade's outcome shown to the client (headers, details).

Nothing is scripted: the real config loader, the real CLI in a subprocess, the real presentation.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens.detector.types import Detection, Span
from truthlens.gateway.policy.config import RouteSettings, parse_config
from truthlens.gateway.policy.presentation import present
from truthlens.modes.base import ChoiceVerdict, Verdict
from truthlens.options import ConfigError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "configs" / "examples"
CASCADE = yaml.safe_load((EXAMPLES / "cascade.yaml").read_text(encoding="utf-8"))
LLM = yaml.safe_load((EXAMPLES / "llm-detector.yaml").read_text(encoding="utf-8"))


def changed(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``doc`` with the dotted ``path`` set to ``value`` (``...`` removes it)."""
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node: Any = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


@pytest.mark.parametrize("name", ["cascade.yaml", "llm-detector.yaml"])
def test_the_example_configs_pass_check_config(name: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-m", "truthlens", "check-config", str(EXAMPLES / name)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ": ok" in done.stdout


def test_the_llm_backend_reads_its_model_endpoint_and_limits() -> None:
    config = parse_config(LLM)
    d = config.detector
    assert d.backend == "llm" and d.model_dir is None and d.confirm is None
    assert d.llm is not None and d.llm.model == "span-detector" and d.llm.role == "detect"
    assert d.llm.endpoint == config.models["span-detector"]  # the models entry, copied
    assert (d.llm.max_tokens, d.max_context_chars, d.max_answer_chars, d.max_in_flight) == (1024, 200000, 50000, 16)


def test_the_confirmer_is_an_llm_detector_and_routes_opt_in() -> None:
    config = parse_config(CASCADE)
    confirm = config.detector.confirm
    assert config.detector.backend == "onnx" and confirm is not None and confirm.when == "flagged"
    assert confirm.detector.backend == "llm" and confirm.detector.llm is not None
    assert confirm.detector.llm.role == "confirm" and confirm.detector.llm.model == "span-detector"
    routes = {d.name: d.route for d in config.decisions}
    assert routes["confirmed"] is not None and routes["confirmed"].confirm is True
    assert routes["chat_completions"] is not None and routes["chat_completions"].confirm is False  # default off


@pytest.mark.parametrize(
    ("doc", "path", "value", "key"),
    [
        (LLM, "detector.llm.model", "absent", "detector.llm.model"),
        (LLM, "detector.llm", ..., "detector.llm"),
        (LLM, "detector.model", "builtin", "detector.model"),  # an encoder key on a generative backend
        (LLM, "detector.batching", {"max_batch_size": 4}, "detector.batching.max_batch_size"),
        (LLM, "detector.llm.max_tokens", 0, "detector.llm.max_tokens"),
        (LLM, "detector.llm.prompt", "mine", "detector.llm.prompt"),
        (LLM, "detector.confirm", {"model": "span-detector"}, "detector.confirm"),
        (CASCADE, "detector.confirm.model", "absent", "detector.confirm.model"),
        (CASCADE, "detector.confirm.backend", "onnx", "detector.confirm.backend"),
        (CASCADE, "detector.confirm.when", "always", "detector.confirm.when"),
        (CASCADE, "detector.llm", {"model": "span-detector"}, "detector.llm"),
        (CASCADE, "detector.confirm", ..., "decisions[0].plugins[0].configuration.confirm"),
        (CASCADE, "decisions.0.plugins.0.configuration.confirm", "yes", "decisions[0].plugins[0].configuration.confirm"),
    ],
)
def test_each_mistake_names_its_key(doc: dict[str, Any], path: str, value: Any, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(changed(doc, path, value))
    assert err.value.key == key, err.value


def confirm_route(actions: list[str]) -> RouteSettings:
    route = parse_config(changed(CASCADE, "decisions.0.plugins.0.configuration.actions", actions)).decisions[0].route
    assert route is not None and route.confirm
    return route


def verdict(*detections: Detection) -> Verdict:
    return Verdict(mode="lightweight", choices=tuple(ChoiceVerdict(i, d) for i, d in enumerate(detections)))


SPAN = Span(start=0, end=4, text="1925", prob=0.99, reason="confirmed_llm")


@pytest.mark.parametrize(
    ("detection", "status", "headers"),
    [
        (Detection("detected", 0.99, (SPAN,), reason="confirmed_llm"), "true", {"x-truthlens-confirm": "confirmed"}),
        (Detection("clean", 0.0, reason="cleared_llm"), "false", {"x-truthlens-confirm": "cleared"}),
        (Detection("detected", 0.99, (SPAN,), reason="confirm_timeout"), "true",
         {"x-truthlens-confirm": "unavailable", "x-truthlens-confirm-reason": "timeout"}),
        (Detection("clean", 0.0), "false", {"x-truthlens-confirm": "not_needed"}),
        (Detection.unavailable("llm_timeout"), "unavailable", {}),
    ],
)
def test_the_client_sees_which_stage_decided(detection: Detection, status: str, headers: dict[str, str]) -> None:
    shown = present(confirm_route(["header", "body"]), "confirmed", verdict(detection), n_choices=1,
                    include_spans=True, latency_s=0.01)
    assert shown.headers["x-truthlens-detected"] == status
    assert {k: v for k, v in shown.headers.items() if k.startswith("x-truthlens-confirm")} == headers
    assert shown.details.get("confirm") == headers.get("x-truthlens-confirm")
    assert shown.details.get("confirm_reason") == headers.get("x-truthlens-confirm-reason")
    # An unavailable check shows the gateway's reason (the header's), not the backend's own label.
    shown_reason = "detector_timeout" if detection.status == "unavailable" else detection.reason
    assert shown.details["choices"][0]["reason"] == shown_reason
    # The warning goes on exactly when the verdict after confirmation is "detected".
    assert (shown.warning is not None) == (detection.status == "detected")


def test_routes_without_confirm_show_no_confirm_fields() -> None:
    route = parse_config(CASCADE).decisions[1].route
    assert route is not None and not route.confirm
    shown = present(route, "chat_completions", verdict(Detection("clean", 0.0)), n_choices=1,
                    include_spans=True, latency_s=0.01)
    assert not any(k.startswith("x-truthlens-confirm") for k in shown.headers)
    assert "confirm" not in shown.details
