"""What one request costs the processor, for capacity planning (docs/benchmarks.md, "Per-request cost").

Through the real Envoy into the real processor (one worker, the shipped ONNX detector, one
intra-op thread) and the scripted upstream (the only scripted part), with a typical RAG
exchange (``bench/soak_traffic.py``: ~1.3k tokens of context, ~150-token answer):

  detection-off   the processor is in the path but the route's check is disabled: the cost
                  of the ext_proc round trips (gRPC, header/body messages, JSON parsing)
  lightweight     the same plus lightweight detection (plain JSON responses)

Prints, side by side, the processor's and Envoy's CPU seconds per request (from
/proc/<pid>/stat, so other jobs on the machine do not inflate it) and the wall latency, at
concurrency 1 and 4. Then the detector alone in ONNX Runtime on one thread: batch 1 eight
times vs batch 8 once, at the model's full window (512 tokens) and at 128 tokens.

Run: ``python -m bench.soak_cost [--requests 40]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from harness import Stack

from bench import soak_traffic as traffic

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` and its reaped children."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime + cutime + cstime) / TICKS


def routes() -> list[dict[str, Any]]:
    off = traffic.decision("off", "off", 20, mode="lightweight")
    off["plugins"][0]["configuration"]["enabled"] = False
    return [traffic.decision("light", "light", 10, mode="lightweight", actions=["header", "body"]), off]


async def run_load(url: str, route: str, n: int, concurrency: int) -> list[float]:
    kind = traffic.Kind("cost", route, "[grounded]", False, 1, (traffic.GROUNDED,))
    latencies: list[float] = []
    remaining = n
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                started = time.monotonic()
                headers = {"content-type": "application/json", "x-soak-route": route}
                async with session.post(url, data=traffic.request_body(kind, remaining), headers=headers) as resp:
                    body = await resp.read()
                    verdict = traffic.classify(kind, resp.status, dict(resp.headers), body, True)
                    if verdict.outcome != "ok":
                        raise RuntimeError(f"{route}: {verdict}")
                latencies.append(time.monotonic() - started)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def through_gateway(n: int) -> list[str]:
    lines = [
        (
            f"{'configuration':16s} {'conc':>4s} {'processor CPU ms/req':>21s} {'envoy CPU ms/req':>17s} "
            f"{'p50 ms':>7s} {'p99 ms':>7s}"
        )
    ]
    with tempfile.TemporaryDirectory(prefix="truthlens-cost-") as tmp, Stack.running(Path(tmp), None) as stack:
        stack.set_script(traffic.script())
        stack.write_config(stack.config_yaml(decisions=routes()))
        url = f"http://127.0.0.1:{stack.ports.listener}/v1/chat/completions"
        proc_pid = stack._children["processor"].proc.pid
        envoy_pid = stack._children["envoy"].proc.pid
        asyncio.run(run_load(url, "light", 8, 2))  # warm-up: sessions, arenas, connections
        results: dict[tuple[str, int], float] = {}
        for route, name in (("off", "detection-off"), ("light", "lightweight")):
            for concurrency in (1, 4):
                p0, e0 = cpu_seconds(proc_pid), cpu_seconds(envoy_pid)
                lat = asyncio.run(run_load(url, route, n, concurrency))
                p_ms = 1000 * (cpu_seconds(proc_pid) - p0) / n
                e_ms = 1000 * (cpu_seconds(envoy_pid) - e0) / n
                results[(route, concurrency)] = p_ms
                lat.sort()
                lines.append(
                    f"{name:16s} {concurrency:4d} {p_ms:21.1f} {e_ms:17.2f} "
                    f"{1000 * statistics.median(lat):7.0f} {1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))]:7.0f}"
                )
        for c in (1, 4):
            lines.append(
                f"lightweight / detection-off processor CPU at concurrency {c}: "
                f"{results[('light', c)] / max(results[('off', c)], 1e-9):.1f}x"
            )
    return lines


def detector_batching(repeats: int = 5) -> list[str]:
    import numpy as np
    import onnxruntime as ort

    from truthlens.detector.manifest import DEFAULT_MODEL_DIR

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(DEFAULT_MODEL_DIR / "model.onnx"), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    rng = np.random.default_rng(0)
    lines = [f"{'seq len':>7s} {'batch 1 x8 ms/row':>18s} {'batch 8 x1 ms/row':>18s} {'speed-up':>9s}"]
    for length in (512, 128):
        def feed(batch: int, length: int = length) -> dict[str, np.ndarray]:
            ids = rng.integers(1000, 20000, size=(batch, length), dtype=np.int64)
            full = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            return {k: full[k] for k in names}

        one, eight = feed(1), feed(8)
        session.run(None, eight)  # warm-up
        t_one, t_eight = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(8):
                session.run(None, one)
            t_one.append((time.perf_counter() - t) / 8)
            t = time.perf_counter()
            session.run(None, eight)
            t_eight.append((time.perf_counter() - t) / 8)
        a, b = 1000 * min(t_one), 1000 * min(t_eight)
        lines.append(f"{length:7d} {a:18.1f} {b:18.1f} {a / b:8.2f}x")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="requests per configuration and concurrency")
    args = parser.parse_args()
    from tokenizers import Tokenizer

    from truthlens.detector.manifest import DEFAULT_MODEL_DIR

    tok = Tokenizer.from_file(str(DEFAULT_MODEL_DIR / "tokenizer.json"))
    ctx = sum(len(tok.encode(p).ids) for p in traffic.PASSAGES)
    ans = len(tok.encode(traffic.GROUNDED).ids)
    print(f"request: {ctx} context tokens in {len(traffic.PASSAGES)} passages, {ans} answer tokens; "
          f"{os.cpu_count()} CPUs shared with other jobs; processor: 1 worker, 1 intra-op thread")
    print("\n".join(through_gateway(args.requests)))
    print("detector alone (ONNX Runtime, 1 thread, shipped int8 model):")
    print("\n".join(detector_batching()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
