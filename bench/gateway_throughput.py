"""What the processor adds to Envoy, side by side in one run (loopback only, bounded in time).

Configurations, all behind the same Envoy and the same scripted upstream:
  envoy-only      a route with ext_proc disabled (Envoy → upstream)
  detection-off   through the processor, the decision has ``enabled: false``
  lightweight     through the processor, lightweight detection (the shipped trained model,
                  or the model directory given with ``--model``)
  lightweight x2  the same with two worker processes sharing the port (SO_REUSEPORT)

Prints requests/s, p50 and p99 latency per configuration and their ratios to envoy-only.
Run: ``python -m bench.gateway_throughput [--seconds 8] [--concurrency 16] [--model DIR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

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


@dataclass(frozen=True, slots=True)
class Result:
    name: str
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def bench_envoy_config(ports: launch.EnvoyPorts) -> str:
    """The shipped envoy.yaml plus one route, ``/direct/...``, with ext_proc disabled."""
    doc: dict[str, Any] = yaml.safe_load(launch.render_envoy_config(ports))
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    disabled = routes[-1]["typed_per_filter_config"]
    routes.insert(
        0,
        {
            "match": {"prefix": "/direct/"},
            "route": {"cluster": "llm_upstream", "prefix_rewrite": "/", "timeout": "300s"},
            "typed_per_filter_config": disabled,
        },
    )
    return yaml.safe_dump(doc, sort_keys=False)


def decisions(enabled: bool) -> list[dict[str, Any]]:
    return [
        {
            "name": "bench",
            "priority": 10,
            "rules": {"type": "path", "prefix": "/v1/chat/completions"},
            "plugins": [{"type": "hallucination", "configuration": {"enabled": enabled, "mode": "lightweight"}}],
        }
    ]


async def load(url: str, seconds: float, concurrency: int, warmup_s: float) -> tuple[int, int, list[float]]:
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        stop_warmup = time.monotonic() + warmup_s
        stop = stop_warmup + seconds

        async def worker() -> None:
            nonlocal errors
            while (now := time.monotonic()) < stop:
                started = now
                try:
                    async with session.post(url, data=BODY, headers={"content-type": "application/json"}) as resp:
                        await resp.read()
                        ok = resp.status == 200
                except aiohttp.ClientError:
                    ok = False
                if started >= stop_warmup:
                    if ok:
                        latencies.append(time.monotonic() - started)
                    else:
                        errors += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return len(latencies), errors, latencies


def measure(name: str, url: str, args: argparse.Namespace) -> Result:
    n, errors, lat = asyncio.run(load(url, args.seconds, args.concurrency, args.warmup))
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
    return Result(name, n, errors, args.seconds, statistics.median(lat) * 1000 if lat else float("nan"), p99 * 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per configuration")
    parser.add_argument("--warmup", type=float, default=1.5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--envoy-concurrency", type=int, default=2,
                        help="Envoy worker threads (each opens its own connection to the processor)")
    parser.add_argument("--model", type=Path, default=None,
                        help="detector model directory (default: the shipped trained model)")
    args = parser.parse_args(argv)

    model_dir: Path | None = args.model  # None: the shipped model
    if not ((model_dir or DEFAULT_MODEL_DIR) / "model.onnx").is_file():
        print(f"no detector model at {model_dir or DEFAULT_MODEL_DIR} (model.onnx missing): build the shipped "
              "model or pass --model DIR")
        return 1
    ports = launch.EnvoyPorts(*(launch.free_port() for _ in range(4)))
    with tempfile.TemporaryDirectory(prefix="truthlens-bench-") as tmp:
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
            results.append(measure("envoy-only", f"{base}/direct/v1/chat/completions", args))
            for workers in (1, 2):
                for enabled in ((False, True) if workers == 1 else (True,)):
                    config.write_text(launch.config_yaml(model_dir, upstream_url, decisions=decisions(enabled)))
                    proc = launch.start_processor(config, f"127.0.0.1:{ports.processor}",
                                                  work / f"processor-{workers}.log", workers=workers)
                    try:
                        launch.wait_processor(f"127.0.0.1:{ports.processor}", proc, timeout_s=120)
                        if workers > 1:
                            log = work / f"processor-{workers}.log"
                            launch.wait_until(
                                lambda log=log, n=workers: log.read_text().count(" serving on ") >= n,  # type: ignore[misc]
                                "all workers", proc, 120,
                            )
                        name = "lightweight" if enabled else "detection-off"
                        name += f" x{workers}" if workers > 1 else ""
                        results.append(measure(name, f"{base}/v1/chat/completions", args))
                    finally:
                        proc.stop()
        finally:
            for child in reversed(children):
                child.stop()
    report(results, "shipped model" if model_dir is None else str(model_dir), args)
    return 0


def report(results: list[Result], model: str, args: argparse.Namespace) -> None:
    base = results[0]
    print(f"gateway throughput: {args.concurrency} connections, {args.seconds:.0f} s each, "
          f"Envoy --concurrency {args.envoy_concurrency}, detector: {model}")
    print(f"{'configuration':<18}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"
          f"{'req/s ÷ envoy':>15}{'p50 ×':>8}{'p99 ×':>8}")
    for r in results:
        print(f"{r.name:<18}{r.rps:>9.0f}{r.p50_ms:>9.2f}{r.p99_ms:>9.2f}{r.errors:>8}"
              f"{r.rps / base.rps:>15.2f}{r.p50_ms / base.p50_ms:>8.2f}{r.p99_ms / base.p99_ms:>8.2f}")
    by_name = {r.name: r for r in results}
    if "lightweight" in by_name and "lightweight x2" in by_name:
        ratio = by_name["lightweight x2"].rps / by_name["lightweight"].rps
        print(f"2 workers vs 1 (lightweight): {ratio:.2f}x requests/s")


if __name__ == "__main__":
    raise SystemExit(main())
