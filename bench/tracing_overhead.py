"""What exporting traces costs, side by side in one run (loopback only, bounded request counts).

Two identical stacks share one scripted upstream: Envoy → processor, one started with no
``OTEL_*`` variables (tracing off: spans are created in-process, nothing is exported, as
shipped), the other with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a local OTLP/gRPC receiver
(:mod:`truthlens.testing.otlp_receiver`, in its own process so that decoding what it receives does not
slow this load generator; the SDK's batch span processor and gRPC exporter, as in production).
Every request carries a client ``traceparent``. Rounds alternate between the two
so background load hits both alike. Routes, chosen by a header:

  detection-off  the processor matches a decision whose check is disabled (the gateway alone:
                 the most sensitive to per-span cost)
  lightweight    one detection with the shipped model
  standard       a hallucinated answer, one refine re-ask, two detections

Prints requests/s and p50 per route with tracing off and with the OTLP exporter, their ratio,
the processor's CPU time per request on each side, and the spans the receiver got per request
(proof the exporter ran).
Run: ``python -m bench.tracing_overhead [--requests 96] [--rounds 8] [--concurrency 4]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench.gateway_throughput import ANSWER, CONTEXT
from truthlens.detector.manifest import DEFAULT_MODEL_DIR
from truthlens.modes.prompts import REFINE_MARKER
from truthlens.testing import launch

HALLUCINATED = "The Eiffel Tower was built by Albert Speer's company between 1925 and 1927 in Berlin."
ROUTES = {"detection-off": False, "lightweight": "lightweight", "standard": "standard"}
SCRIPT = [
    {"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": ANSWER}},
    {"name": "hallucinated", "match": {"model": "bench-standard"}, "reply": {"content": HALLUCINATED}},
    {"name": "answer", "match": {}, "reply": {"content": ANSWER}},
]


def decisions() -> list[dict[str, Any]]:
    out = []
    for name, mode in ROUTES.items():
        configuration: dict[str, Any] = {"enabled": False} if mode is False else {
            "enabled": True, "mode": mode, "actions": ["header"]}
        if mode == "standard":
            configuration["max_iterations"] = 1
        out.append({
            "name": name, "priority": 10,
            "rules": {"operator": "AND", "conditions": [
                {"type": "path", "prefix": "/v1/chat/completions"},
                {"type": "header", "name": "x-bench-route", "value": name}]},
            "plugins": [{"type": "hallucination", "configuration": configuration}],
        })
    return out


@dataclass
class Sample:
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    errors: int = 0
    iterations: int = 0
    trace_ids: set[str] = field(default_factory=set)
    cpu_s: float = 0.0  # the processor's CPU time (user + system) spent on the measured requests

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else float("nan")

    @property
    def cpu_ms_per_request(self) -> float:
        return self.cpu_s * 1000 / len(self.latencies) if self.latencies else float("nan")

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.latencies) * 1000 if self.latencies else float("nan")


async def batch(url: str, route: str, n: int, concurrency: int, into: Sample) -> None:
    """``n`` requests, ``concurrency`` at a time, each with its own client trace."""
    body = json.dumps({
        "model": "bench-standard" if route == "standard" else "bench-model",
        "messages": [{"role": "user", "content": "When and by whom was the Eiffel Tower built?"}],
        "truthlens_context": CONTEXT,
    }).encode()
    left = n
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                trace_id = os.urandom(16).hex()
                into.trace_ids.add(trace_id)
                headers = {"content-type": "application/json", "x-bench-route": route,
                           "traceparent": f"00-{trace_id}-{os.urandom(8).hex()}-01"}
                started = time.monotonic()
                try:
                    async with session.post(url, data=body, headers=headers) as resp:
                        await resp.read()
                        ok = resp.status == 200 and (route == "detection-off" or "x-truthlens-mode" in resp.headers)
                        into.iterations += int(resp.headers.get("x-truthlens-iterations", "0") or 0)
                except aiohttp.ClientError:
                    ok = False
                if ok:
                    into.latencies.append(time.monotonic() - started)
                else:
                    into.errors += 1

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        into.seconds += time.monotonic() - started


@dataclass
class Side:
    name: str
    ports: launch.EnvoyPorts
    env: dict[str, str] | None
    processor: launch.Child | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports.listener}/v1/chat/completions"

    def processor_cpu_s(self) -> float:
        """CPU seconds the processor process has used (Linux ``/proc``; NaN elsewhere). Steadier
        than wall-clock on a shared machine: other load does not inflate it."""
        if self.processor is None:
            return float("nan")
        try:
            fields = Path(f"/proc/{self.processor.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=96, help="measured requests per route and side")
    parser.add_argument("--rounds", type=int, default=8, help="alternations between the two sides")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=4, help="unmeasured requests per route and side")
    parser.add_argument("--routes", default=",".join(ROUTES), help="comma-separated subset of " + ", ".join(ROUTES))
    args = parser.parse_args(argv)
    routes = [r.strip() for r in args.routes.split(",") if r.strip()]
    if unknown := sorted(set(routes) - set(ROUTES)):
        parser.error(f"--routes: unknown {unknown} (expected some of {', '.join(ROUTES)})")
    if not (DEFAULT_MODEL_DIR / "model.onnx").is_file():
        print(f"no detector model at {DEFAULT_MODEL_DIR} (model.onnx missing): build the shipped model first")
        return 1

    upstream_port = launch.free_port()
    upstream_url = f"http://127.0.0.1:{upstream_port}/v1"

    def ports() -> launch.EnvoyPorts:
        return launch.EnvoyPorts(listener=launch.free_port(), upstream=upstream_port,
                                 processor=launch.free_port(), admin=launch.free_port())

    with tempfile.TemporaryDirectory(prefix="truthlens-bench-") as tmp:
        work = Path(tmp)
        receiver_port = launch.free_port()
        receiver = launch.Child("otlp-receiver", [sys.executable, "-m", "truthlens.testing.otlp_receiver", "--port",
                                                  str(receiver_port), "--summary", str(work / "spans.json")],
                                work / "receiver.log")
        (work / "script.yaml").write_text(yaml.safe_dump(SCRIPT), encoding="utf-8")
        config = work / "config.yaml"
        config.write_text(launch.config_yaml(None, upstream_url, decisions=decisions()), encoding="utf-8")
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        sides = [
            Side("off", ports(), base_env),
            Side("otlp", ports(), {**base_env, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver_port}"}),
        ]
        results: dict[tuple[str, str], Sample] = {}
        with contextlib.ExitStack() as running:  # left in reverse: processors flush their spans, then the rest
            running.callback(receiver.stop)
            upstream = launch.start_upstream(upstream_port, work / "upstream.log", work / "script.yaml")
            running.callback(upstream.stop)
            launch.wait_upstream(upstream_port, upstream)
            for side in sides:
                (work / side.name).mkdir()
                side.processor = running.enter_context(launch.running_stack(
                    config, side.ports, work / side.name, own_upstream=False, processor_env=side.env,
                    processor_timeout_s=120)).processor
            for route in routes:
                for side in sides:  # warm-up: model sessions, connections, the embedder-free path
                    asyncio.run(batch(side.url, route, args.warmup, args.concurrency, Sample()))
                per_round = max(1, args.requests // args.rounds)
                for k in range(args.rounds):
                    # Alternate which side goes first, so neither always follows the other.
                    for side in sides if k % 2 == 0 else reversed(sides):
                        sample = results.setdefault((route, side.name), Sample())
                        cpu_before = side.processor_cpu_s()
                        asyncio.run(batch(side.url, route, per_round, args.concurrency, sample))
                        sample.cpu_s += side.processor_cpu_s() - cpu_before
        summary = work / "spans.json"
        received: dict[str, int] = json.loads(summary.read_text()) if summary.is_file() else {}
    spans_per_route = {route: sum(received.get(t, 0) for t in results[(route, "otlp")].trace_ids)
                       / max(1, len(results[(route, "otlp")].trace_ids)) for route in routes}
    report(routes, results, spans_per_route, args)
    return 0


def report(routes: list[str], results: dict[tuple[str, str], Sample], spans: dict[str, float],
           args: argparse.Namespace) -> None:
    print(f"tracing overhead: {args.requests} requests per route and side in {args.rounds} alternating rounds, "
          f"{args.concurrency} concurrent, loopback; 'otlp' exports every span over OTLP/gRPC to a local receiver")
    print(f"{'route':<15}{'off req/s':>10}{'otlp req/s':>11}{'req/s ×':>9}{'off p50 ms':>12}{'otlp p50 ms':>12}"
          f"{'p50 ×':>8}{'cost %':>8}{'off CPU ms':>11}{'otlp CPU ms':>12}{'CPU ×':>7}{'spans/req':>10}"
          f"{'errors':>7}")
    for route in routes:
        off, on = results[(route, "off")], results[(route, "otlp")]
        rps_ratio = on.rps / off.rps
        p50_ratio = on.p50_ms / off.p50_ms
        cost = (1.0 / rps_ratio - 1.0) * 100.0  # extra time per request, from throughput
        per_req = spans.get(route, 0.0)
        print(f"{route:<15}{off.rps:>10.1f}{on.rps:>11.1f}{rps_ratio:>9.3f}{off.p50_ms:>12.1f}{on.p50_ms:>12.1f}"
              f"{p50_ratio:>8.3f}{cost:>8.1f}{off.cpu_ms_per_request:>11.2f}{on.cpu_ms_per_request:>12.2f}"
              f"{on.cpu_ms_per_request / off.cpu_ms_per_request:>7.3f}{per_req:>10.1f}{off.errors + on.errors:>7}")
    print("cost % = extra wall time per request from throughput; CPU ms = the processor's own CPU per request "
          "(batch export runs in its background thread and is included). Target: ≤ 5 %.")


if __name__ == "__main__":
    raise SystemExit(main())
