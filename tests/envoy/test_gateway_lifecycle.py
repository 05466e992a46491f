"""Config hot reload, fail-open when the processor is down, graceful drain on SIGTERM, worker
processes, and the shipped detector end to end.

Real Envoy, real processor processes, real ONNX detector; scripted: only the upstream LLM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from gateway_routes import CONTEXT, DECISIONS, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision

from truthlens.testing import launch

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"


def test_valid_config_is_applied_and_invalid_one_keeps_the_old(gateway: Stack) -> None:
    header_only = [decision("everything", priority=10, actions=["header"])]
    assert gateway.write_config(gateway.config_yaml(decisions=header_only)) == "applied"
    resp = gateway.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT))
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED  # no body action any more

    invalid = gateway.config_yaml(decisions=[decision("bad", actions=["shout"])])
    assert gateway.write_config(invalid) == "rejected"
    assert gateway.write_config("decisions: [unclosed") == "rejected"
    resp = gateway.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT))
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED  # the old config stands
    assert gateway.processor_alive()

    assert gateway.write_config(gateway.config_yaml(decisions=DECISIONS)) == "applied"
    resp = gateway.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT))
    assert resp.json()["choices"][0]["message"]["content"].startswith("⚠️ Warning")


def test_processor_down_fails_open_and_comes_back(gateway: Stack) -> None:
    gateway.stop_processor()
    try:
        resp = gateway.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT))
        assert resp.status == 200
        assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED
        # Unchecked answers say so: Envoy's route mark, which only the processor replaces.
        assert resp.headers["x-truthlens-detected"] == "unavailable"
        assert resp.headers["x-truthlens-reason"] == "processor_unreachable"
        assert sorted(k for k in resp.headers if k.startswith("x-truthlens")) == [
            "x-truthlens-detected", "x-truthlens-reason"]
    finally:
        gateway.start_processor()
        gateway.wait_processor()
    resp = gateway.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT))
    assert resp.headers["x-truthlens-detected"] == "true"


def test_sigterm_drains_in_flight_exchanges(gateway: Stack) -> None:
    results: list[RawResponse] = []
    request = threading.Thread(
        target=lambda: results.append(gateway.raw("POST", PATH, chat_body("slow-upstream", context=CONTEXT)))
    )
    request.start()
    try:
        # The exchange is in flight (the upstream takes 1.5 s) when the processor is told to stop.
        launch.wait_until(lambda: len(gateway.upstream_calls()) > 0, "the request to arrive", None, 10)
        assert gateway.stop_processor() == 0
        request.join(20)
        assert results and results[0].status == 200
        assert results[0].headers["x-truthlens-detected"] == "true"  # checked, not dropped
    finally:
        request.join(20)
        gateway.start_processor()
        gateway.wait_processor()


def test_two_workers_serve_one_port_and_stop_cleanly(tmp_path: Path, stack: Stack) -> None:
    port = launch.free_port()
    config = tmp_path / "config.yaml"
    config.write_text(stack.config_yaml(decisions=DECISIONS), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    child = launch.start_processor(config, f"127.0.0.1:{port}", tmp_path / "workers.log",
                                   metrics_listen=f"127.0.0.1:{launch.free_port()}", workers=2, env=env)
    try:
        launch.wait_processor(f"127.0.0.1:{port}", child, timeout_s=90)
        log = tmp_path / "workers.log"
        launch.wait_until(lambda: all(f"worker {i} serving" in log.read_text() for i in (0, 1)), "both workers", child, 90)
        child.proc.send_signal(signal.SIGTERM)
        assert child.proc.wait(30) == 0
    finally:
        child.stop()


def test_shipped_detector_tells_grounded_from_hallucinated(gateway: Stack) -> None:
    # The demo's passage and questions (deploy/demo_script.yaml), answered right and wrong.
    gateway.set_script(
        [
            {"match": {"user": "completed"}, "reply": {"content": "The Eiffel Tower was completed in 1889."}},
            {"match": {"user": "designed"},
             "reply": {"content": "The Eiffel Tower was designed by Leonardo da Vinci in 1502 and is made of solid gold."}},
        ]
    )
    grounded = gateway.raw("POST", PATH, chat_body("When was the Eiffel Tower completed?", context=CONTEXT))
    wrong = gateway.raw("POST", PATH, chat_body("Who designed the Eiffel Tower?", context=CONTEXT))
    assert grounded.headers["x-truthlens-detected"] == "false"
    assert wrong.headers["x-truthlens-detected"] == "true"
    assert float(wrong.headers["x-truthlens-score"]) > float(grounded.headers["x-truthlens-score"])
    assert grounded.json()["choices"][0]["message"]["content"] == "The Eiffel Tower was completed in 1889."


def test_serve_reports_a_bad_start_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(launch.config_yaml(tmp_path / "no-such-model", "http://127.0.0.1:9/v1"), encoding="utf-8")
    argv = [sys.executable, "-m", "truthlens", "serve", "--config", str(config), "--metrics-listen", "off",
            "--listen", f"127.0.0.1:{launch.free_port()}"]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60, cwd=launch.REPO_ROOT)
    assert done.returncode == 1
    assert "cannot start" in done.stderr and "no-such-model" in done.stderr
    assert "Traceback" not in done.stderr
    bad_flags = subprocess.run([*argv[:4], "--workers", "0"], check=False, capture_output=True, text=True, timeout=60,
                               cwd=launch.REPO_ROOT)
    assert bad_flags.returncode == 2 and "--workers" in bad_flags.stderr
