"""What the processor adds to Envoy, side by side in one run (loopback only, bounded in time).

Configurations, all behind the same Envoy and the same scripted upstream:
  envoy-only        a route with ext_proc disabled (Envoy → upstream); measured first and last,
                    the ratios use the mean of the two (the spread says how much the machine drifted)
  ext_proc floor    a do-nothing Python grpc.aio ext_proc server (``bench/extproc_floor.py``):
                    one message, answered with "skip the rest"; no processor can cost less
  ext_proc floor +body  the same server asking for the request body too (``--body``) and
                    answering it unchanged: the floor of an exchange whose body must be seen
                    (a request that may carry the context field), two messages
  no-route          through the processor, no decision matches the path (as for an embeddings
                    call): request headers, and the request body for the context field only
  detection-off     through the processor, the decision has ``enabled: false`` (its answers are
                    still scrubbed of verdicts the upstream wrote)
  detection-off bypass  the same decision, the processor running, but a second Envoy (same
                    settings) whose routes are what ``truthlens envoy-routes --forward-context-field``
                    prints for that config: the decision's exchanges never reach the processor
  lightweight       through the processor, lightweight detection (the shipped trained model,
                    or the model directory given with ``--model``)
  ... x2            the same with two worker processes sharing the port (SO_REUSEPORT)

``--beside COMMIT`` runs every selected processor configuration (but the floors and the bypass) a
second time, just before this build's, with the processor of ``COMMIT``'s code (``git archive``,
``bench/other_build.py``) behind the same Envoy and upstream: a change of the processor told
apart from a change of the machine, in one run.

Each configuration runs at every connection count (default 1 and 16). Prints requests/s, p50
and p99 per configuration, their ratios to envoy-only, the p50 the processor adds (ms), and the
ext_proc messages per exchange (from the processor's ``truthlens_extproc_messages_total``).
Run: ``python -m bench.gateway_throughput [--seconds 8] [--connections 1,16] [--model DIR]
[--beside COMMIT]``.

Profile the processor under the same load (an unchecked exchange; ``--only lightweight`` for a
checked one): ``python -m bench.gateway_throughput --only detection-off --connections 16
--seconds 20 --profile-s 15`` runs ``py-spy record`` (``pip install py-spy``) on the processor
and writes ``gateway-profile-<configuration>.svg`` (a flame graph; ``--profile-format raw``:
collapsed stacks in a ``.txt``) in the current directory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench import other_build
from truthlens.detector.manifest import DEFAULT_MODEL_DIR
from truthlens.testing import launch

PASSAGE = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named "
    "after the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889. "
    "It was the entrance arch to the 1889 World's Fair and is 330 metres tall."
)
CONTEXT = [PASSAGE]
ANSWER = (
    "The Eiffel Tower was built by Gustave Eiffel's company between 1887 and 1889 as the entrance arch "
    "to the World's Fair. It stands in Paris on the Champ de Mars and is about 330 metres tall."
)
SCRIPT = [{"name": "answer", "match": {}, "reply": {"content": ANSWER}}]
BODY = json.dumps(
    {
        "model": "bench-model",
        "messages": [{"role": "user", "content": "When and by whom was the Eiffel Tower built?"}],
        "truthlens_context": CONTEXT,
    }
).encode()
# (name, the route's detection: None no decision matches / False off / True on, worker processes),
# in the order they run.
FLOOR = "ext_proc floor"
FLOOR_BODY = "ext_proc floor +body"
BYPASS = "detection-off bypass"
PROCESSOR_CONFIGS: tuple[tuple[str, bool | None, int], ...] = (
    (FLOOR, None, 1),
    (FLOOR_BODY, None, 1),
    ("no-route", None, 1),
    ("detection-off", False, 1),
    (BYPASS, False, 1),
    ("lightweight", True, 1),
    ("detection-off x2", False, 2),
    ("lightweight x2", True, 2),
)
ENVOY_ONLY = "envoy-only"
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Result:
    name: str
    connections: int
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    messages_per_exchange: float | None = None  # None: Envoy alone (no processor)
    processor_cpu_ms: float | None = None  # CPU time per exchange, warm-up included
    envoy_cpu_ms: float | None = None

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


@dataclass(frozen=True, slots=True)
class Load:
    measured: int
    total: int  # warm-up included: what the processor saw
    errors: int
    latencies: list[float]


def bench_envoy_config(ports: launch.EnvoyPorts) -> str:
    """The shipped envoy.yaml plus one route, ``/direct/...``, with ext_proc disabled."""
    doc: dict[str, Any] = yaml.safe_load(launch.render_envoy_config(ports))
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    disabled = next(r["typed_per_filter_config"] for r in routes if "typed_per_filter_config" in r)
    routes.insert(
        0,
        {
            "match": {"prefix": "/direct/"},
            "route": {"cluster": "llm_upstream", "prefix_rewrite": "/", "timeout": "300s"},
            "typed_per_filter_config": disabled,
        },
    )
    return yaml.safe_dump(doc, sort_keys=False)


def generated_routes(config: Path) -> list[dict[str, Any]]:
    """What ``truthlens envoy-routes`` prints for ``config`` (the bench's body carries the context
    field, so it is accepted with ``--forward-context-field``)."""
    printed = subprocess.run(
        [sys.executable, "-m", "truthlens", "envoy-routes", str(config), "--forward-context-field"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    return list(yaml.safe_load(printed)["routes"])


def decisions(enabled: bool | None) -> list[dict[str, Any]]:
    """One decision on the chat path, detection on or off; None: on another path only (the chat
    requests match no decision, as an embeddings call would)."""
    return [
        {
            "name": "bench",
            "priority": 10,
            "rules": {"type": "path", "prefix": "/v1/chat/completions" if enabled is not None else "/v1/other"},
            "plugins": [{"type": "hallucination", "configuration": {"enabled": bool(enabled), "mode": "lightweight"}}],
        }
    ]


async def load(url: str, seconds: float, connections: int, warmup_s: float) -> Load:
    latencies: list[float] = []
    errors = total = 0
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        stop_warmup = time.monotonic() + warmup_s
        stop = stop_warmup + seconds

        async def worker() -> None:
            nonlocal errors, total
            while (now := time.monotonic()) < stop:
                started = now
                try:
                    async with session.post(url, data=BODY, headers={"content-type": "application/json"}) as resp:
                        await resp.read()
                        ok = resp.status == 200
                except aiohttp.ClientError:
                    ok = False
                total += 1
                if started >= stop_warmup:
                    if ok:
                        latencies.append(time.monotonic() - started)
                    else:
                        errors += 1

        await asyncio.gather(*(worker() for _ in range(connections)))
    return Load(len(latencies), total, errors, latencies)


def messages_seen(metrics_port: int) -> float | None:
    """ext_proc messages the processor has answered so far (every worker's, every phase); None
    when it does not count them."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    counts = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith("truthlens_extproc_messages_total{")]
    return sum(counts) if counts else None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` and its live descendants (worker processes), read from
    /proc: other jobs on the machine do not inflate it."""
    total = 0.0
    for p in (pid, *_descendants(pid)):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def _descendants(pid: int) -> list[int]:
    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return [d for c in children for d in (c, *_descendants(c))]


def measure(name: str, url: str, connections: int, args: argparse.Namespace, envoy_pid: int,
            processor_pid: int | None = None, metrics_port: int | None = None) -> Result:
    """One load run (``processor_pid`` None: Envoy alone; ``metrics_port`` None: no message count)."""
    before = messages_seen(metrics_port) if metrics_port is not None else None
    cpu_before = (cpu_seconds(envoy_pid), cpu_seconds(processor_pid) if processor_pid is not None else 0.0)
    run = asyncio.run(load(url, args.seconds, connections, args.warmup))
    time.sleep(0.3)  # the last streams close after their answers went out
    envoy_ms = (cpu_seconds(envoy_pid) - cpu_before[0]) * 1000 / max(1, run.total)
    per_exchange = processor_ms = None
    if processor_pid is not None:
        processor_ms = (cpu_seconds(processor_pid) - cpu_before[1]) * 1000 / max(1, run.total)
    if metrics_port is not None and before is not None:
        after = messages_seen(metrics_port)
        if after is not None:
            per_exchange = (after - before) / max(1, run.total)
    lat = sorted(run.latencies)
    p50 = statistics.median(lat) * 1000 if lat else float("nan")
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else float("nan")
    return Result(name, connections, run.measured, run.errors, args.seconds, p50, p99, per_exchange,
                  processor_ms, envoy_ms)


def profile(pid: int, seconds: float, out: Path, fmt: str) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` on the processor (its worker processes too) while the load runs."""
    spy = shutil.which("py-spy")
    if spy is None:
        print("py-spy is not installed (pip install py-spy): no profile")
        return None
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--subprocesses", "--duration", str(int(seconds)),
         "--rate", "250", "--gil", "--format", fmt, "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per configuration")
    parser.add_argument("--warmup", type=float, default=1.5)
    parser.add_argument("--connections", default="1,16", help="comma-separated connection counts")
    parser.add_argument("--envoy-concurrency", type=int, default=2,
                        help="Envoy worker threads (each opens its own connection to the processor)")
    parser.add_argument("--model", type=Path, default=None,
                        help="detector model directory (default: the shipped trained model)")
    parser.add_argument("--only", action="append", default=None,
                        choices=[name for name, _, _ in PROCESSOR_CONFIGS],
                        help="run only these processor configurations (repeatable; envoy-only always runs)")
    parser.add_argument("--beside", metavar="COMMIT", default=None,
                        help="also run each configuration with the processor of this commit's code, "
                             "just before this build's")
    parser.add_argument("--profile-s", type=float, default=0.0,
                        help="py-spy the processor for this many seconds of each configuration's first load")
    parser.add_argument("--profile-format", choices=("flamegraph", "raw", "speedscope"), default="flamegraph",
                        help="py-spy's output: an SVG flame graph, collapsed stacks (raw) or speedscope JSON")
    args = parser.parse_args(argv)
    connection_counts = [int(c) for c in args.connections.split(",") if c.strip()]

    model_dir: Path | None = args.model  # None: the shipped model
    if not ((model_dir or DEFAULT_MODEL_DIR) / "model.onnx").is_file():
        print(f"no detector model at {model_dir or DEFAULT_MODEL_DIR} (model.onnx missing): build the shipped "
              "model or pass --model DIR")
        return 1
    selected = [c for c in PROCESSOR_CONFIGS if args.only is None or c[0] in args.only]
    ports = launch.EnvoyPorts(*(launch.free_port() for _ in range(4)))
    with contextlib.ExitStack() as builds, tempfile.TemporaryDirectory(prefix="truthlens-bench-") as tmp:
        # (name, detection, workers, the processor's environment: None for this build's)
        configs: list[tuple[str, bool | None, int, dict[str, str] | None]] = []
        other_env = builds.enter_context(other_build.tree_at(args.beside, ["src"]))[1] if args.beside else None
        for name, enabled, workers in selected:
            if other_env is not None and name not in (FLOOR, FLOOR_BODY, BYPASS):
                configs.append((f"{name} @{args.beside[:9]}", enabled, workers, other_env))
            configs.append((name, enabled, workers, None))
        work = Path(tmp)
        upstream_url = f"http://127.0.0.1:{ports.upstream}/v1"
        config = work / "config.yaml"
        script = work / "script.yaml"
        script.write_text(yaml.safe_dump(SCRIPT), encoding="utf-8")
        children: list[launch.Child] = []
        results: list[Result] = []
        try:
            upstream = launch.start_upstream(ports.upstream, work / "upstream.log", script)
            envoy = launch.start_envoy(bench_envoy_config(ports), work, concurrency=args.envoy_concurrency)
            children += [upstream, envoy]
            launch.wait_upstream(ports.upstream, upstream)
            launch.wait_envoy(ports.admin, envoy)
            base = f"http://127.0.0.1:{ports.listener}"
            for n in connection_counts:
                results.append(measure(ENVOY_ONLY, f"{base}/direct/v1/chat/completions", n, args, envoy.proc.pid))
            for name, enabled, workers, env in configs:
                log = work / f"processor-{name.replace(' ', '').replace('@', '')}.log"
                metrics_port: int | None = None
                second: launch.Child | None = None  # the bypass configuration's own Envoy
                if name in (FLOOR, FLOOR_BODY):
                    proc = launch.Child(name, [sys.executable, str(Path(__file__).with_name("extproc_floor.py")),
                                               "--listen", f"127.0.0.1:{ports.processor}",
                                               *(["--body"] if name == FLOOR_BODY else [])], log)
                else:
                    config.write_text(launch.config_yaml(model_dir, upstream_url, decisions=decisions(enabled)))
                    metrics_port = launch.free_port()
                    proc = launch.start_processor(config, f"127.0.0.1:{ports.processor}", log, workers=workers,
                                                  metrics_listen=f"127.0.0.1:{metrics_port}", env=env)
                try:
                    launch.wait_processor(f"127.0.0.1:{ports.processor}", proc, timeout_s=120)
                    launch.wait_until(
                        lambda log=log, n=workers: log.read_text().count(" serving on ") >= n,
                        "all workers", proc, 120,
                    )
                    url, envoy_pid = f"{base}/v1/chat/completions", envoy.proc.pid
                    if name == BYPASS:
                        # Same Envoy settings, the generated routes; the processor stays up (its
                        # message counter shows whether any exchange still reaches it).
                        bypass_ports = launch.EnvoyPorts(launch.free_port(), ports.upstream, ports.processor,
                                                         launch.free_port())
                        bypass_dir = work / "bypass-envoy"
                        bypass_dir.mkdir(exist_ok=True)
                        second = launch.start_envoy(
                            launch.with_routes(launch.render_envoy_config(bypass_ports), generated_routes(config)),
                            bypass_dir, concurrency=args.envoy_concurrency)
                        launch.wait_envoy(bypass_ports.admin, second)
                        url = f"http://127.0.0.1:{bypass_ports.listener}/v1/chat/completions"
                        envoy_pid = second.proc.pid
                    spy = None
                    if args.profile_s > 0:
                        suffix = {"flamegraph": "svg", "raw": "txt", "speedscope": "json"}[args.profile_format]
                        out = Path(f"gateway-profile-{name.replace(' ', '')}.{suffix}").resolve()
                        spy = profile(proc.proc.pid, args.profile_s, out, args.profile_format)
                    for n in connection_counts:
                        results.append(measure(name, url, n, args, envoy_pid, proc.proc.pid, metrics_port))
                    if spy is not None:
                        spy.wait()
                finally:
                    proc.stop()
                    if second is not None:
                        second.stop()
            for n in connection_counts:
                results.append(measure(ENVOY_ONLY, f"{base}/direct/v1/chat/completions", n, args, envoy.proc.pid))
        finally:
            for child in reversed(children):
                child.stop()
    report(results, "shipped model" if model_dir is None else str(model_dir), args)
    return 0


def _envoy_baseline(results: list[Result], connections: int) -> Result:
    """The mean of the envoy-only runs at ``connections`` (first and last)."""
    runs = [r for r in results if r.name == ENVOY_ONLY and r.connections == connections]
    seconds = sum(r.seconds for r in runs)
    return Result(
        ENVOY_ONLY, connections, sum(r.requests for r in runs), sum(r.errors for r in runs), seconds,
        statistics.fmean(r.p50_ms for r in runs), statistics.fmean(r.p99_ms for r in runs),
    )


def _opt(value: float | None, width: int) -> str:
    return f"{value:>{width}.2f}" if value is not None else f"{'-':>{width}}"


def report(results: list[Result], model: str, args: argparse.Namespace) -> None:
    print(f"gateway throughput: {args.seconds:.0f} s per configuration, Envoy --concurrency "
          f"{args.envoy_concurrency}, detector: {model}")
    print("(msgs/ex: ext_proc messages per exchange; CPU ms: CPU time per exchange of the processor's "
          "processes and of Envoy)")
    print(f"{'connections':>11} {'configuration':<22}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'errors':>7}"
          f"{'msgs/ex':>8}{'proc CPU ms':>12}{'envoy CPU ms':>13}{'req/s ÷ envoy':>14}{'p50 ×':>7}{'p50 +ms':>8}")
    counts = sorted({r.connections for r in results})
    for n in counts:
        base = _envoy_baseline(results, n)
        for r in (x for x in results if x.connections == n):
            print(f"{n:>11} {r.name:<22}{r.rps:>8.0f}{r.p50_ms:>8.2f}{r.p99_ms:>8.2f}{r.errors:>7}"
                  f"{_opt(r.messages_per_exchange, 8)}{_opt(r.processor_cpu_ms, 12)}{_opt(r.envoy_cpu_ms, 13)}"
                  f"{r.rps / base.rps:>14.2f}{r.p50_ms / base.p50_ms:>7.2f}{r.p50_ms - base.p50_ms:>8.2f}")
    by_key = {(r.name, r.connections): r for r in results}
    for n in counts:
        for name in ("detection-off", "lightweight"):
            one, two = by_key.get((name, n)), by_key.get((f"{name} x2", n))
            if one is not None and two is not None:
                print(f"2 workers vs 1 ({name}, {n} connections): {two.rps / one.rps:.2f}x requests/s")
    for name in (FLOOR, FLOOR_BODY, "no-route", "detection-off", BYPASS):
        at16, at1 = by_key.get((name, 16)), by_key.get((name, 1))
        parts = []
        if at16 is not None:
            parts.append(f"{at16.rps / _envoy_baseline(results, 16).rps:.2f}x Envoy-alone requests/s at 16 "
                         "connections (target >= 0.6)")
        if at1 is not None:
            parts.append(f"{at1.p50_ms - _envoy_baseline(results, 1).p50_ms:+.2f} ms p50 at 1 connection "
                         "(target <= 0.8)")
        if parts:
            print(f"{name}: {', '.join(parts)}")


if __name__ == "__main__":
    raise SystemExit(main())
