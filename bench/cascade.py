"""The cascade's extra hop: encoder alone vs encoder→LLM confirmation, side by side, in one run.

The shipped encoder (ONNX Runtime, in this process) checks the same answers twice per cell:
alone (``detector.backend: onnx``), and as the first stage of the cascade
(:class:`truthlens.detector.backends.cascade.CascadeDetector`), whose flagged answers go over real HTTP
to the scripted OpenAI-compatible server (``truthlens upstream``, a child process: its span
judge answers the strict-schema request in a few milliseconds — a test double, not a model).
So the numbers are the gateway's cost of the hop (prompt, HTTP, JSON, quote mapping) plus
whatever ``--judge-delay-ms`` scripts for the model's own time; a real span detector adds its
generation time on top (hundreds of ms to seconds: measure it with the quality recipe in
docs/benchmarks.md).

Three workloads: every answer hallucinated (every check hops), every answer grounded (the
encoder clears them: no hop) and half and half; at each concurrency level it prints checks/s,
p50 and p95 latency of both, the ratios, and the confirmer's calls per check (read from the
server's call log: one per flagged answer, whatever its number of spans).

    python -m bench.cascade [--checks 48] [--concurrency 1 8] [--judge-delay-ms 0] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from truthlens.detector.backends.cascade import CascadeDetector
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import DetectionInput, Detector, DetectorSettings, LlmSettings
from truthlens.llm import Endpoint
from truthlens.testing import launch

CONTEXT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It is 330 metres tall.",
    "It was designed by the engineering company of Gustave Eiffel and completed in March 1889 for the World's Fair.",
    "The tower received 5.9 million visitors in 2022 and is the most visited paid monument in the world.",
)
QUESTION = "Tell me about the Eiffel Tower: its height, designer, completion and visitors."
GROUNDED = (
    "The Eiffel Tower is 330 metres tall and was completed in March 1889.",
    "It was designed by the engineering company of Gustave Eiffel for the World's Fair.",
    "The tower received 5.9 million visitors in 2022.",
)
HALLUCINATED = (
    "The Eiffel Tower is 410 metres tall and was completed in 1925 by Albert Speer.",
    "It was designed by Antoni Gaudi and received 12 million visitors in 2015.",
    "The tower was completed in 1925 and stands in Berlin.",
)
WORKLOADS = {"hallucinated": (HALLUCINATED,), "grounded": (GROUNDED,), "half and half": (HALLUCINATED, GROUNDED)}
SPAN_MODEL = "span-detector"


@dataclass(frozen=True, slots=True)
class Cell:
    checks_per_s: float
    p50_ms: float
    p95_ms: float
    flagged: int  # checks whose final verdict is "detected"
    unavailable: int


def answers(workload: str, count: int) -> list[DetectionInput]:
    pools = WORKLOADS[workload]
    items = []
    for i in range(count):
        pool = pools[i % len(pools)]
        items.append(DetectionInput(CONTEXT, QUESTION, pool[(i // len(pools)) % len(pool)]))
    return items


Run = tuple[float, list[float], list[str]]  # wall seconds, latencies (ms), verdict statuses


async def run(detector: Detector, items: Sequence[DetectionInput], concurrency: int) -> Run:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    statuses: list[str] = []

    async def one(item: DetectionInput) -> None:
        async with gate:
            started = time.perf_counter()
            found = await detector.detect(item, threshold=0.5, timeout_s=60)
            latencies.append((time.perf_counter() - started) * 1000.0)
            statuses.append(found.status)

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in items))
    return time.perf_counter() - started, latencies, statuses


def summarise(wall: float, latencies: list[float], statuses: list[str]) -> Cell:
    ordered = sorted(latencies)
    return Cell(
        checks_per_s=len(latencies) / wall,
        p50_ms=statistics.median(ordered),
        p95_ms=ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        flagged=statuses.count("detected"),
        unavailable=statuses.count("unavailable"),
    )


def judge_calls(upstream_url: str) -> int:
    with urllib.request.urlopen(f"{upstream_url}/_calls", timeout=10) as resp:
        return sum(1 for c in json.loads(resp.read()) if c["model"] == SPAN_MODEL)


def reset(upstream_url: str) -> None:
    request = urllib.request.Request(f"{upstream_url}/_reset", data=b"{}", method="POST")
    urllib.request.urlopen(request, timeout=10).close()


def script(upstream_url: str, delay_ms: float) -> None:
    reply = {"span_judge": True, "delay_s": delay_ms / 1000}
    rules = [{"name": "judge", "match": {"model": SPAN_MODEL}, "reply": reply}]
    request = urllib.request.Request(f"{upstream_url}/_script", data=json.dumps(rules).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=10).close()


async def bench(upstream_url: str, args: argparse.Namespace) -> list[tuple[str, int, Cell, Cell, float]]:
    encoder = create_detector(DetectorSettings(provider="cpu", intra_op_threads=args.threads))
    endpoint = Endpoint(base_url=f"{upstream_url}/v1", timeout_s=30, max_retries=0)
    confirmer = create_detector(DetectorSettings(backend="llm", max_in_flight=64,
                                                 llm=LlmSettings(SPAN_MODEL, endpoint, role="confirm")))
    cascade = CascadeDetector(encoder, confirmer)
    rows = []
    try:
        await run(cascade, answers("half and half", 8), 4)  # warm both stages (sessions, pools)
        for workload in WORKLOADS:
            for level in args.concurrency:
                items = answers(workload, args.checks)
                alone: list[Run] = []
                both: list[Run] = []
                reset(upstream_url)
                for _ in range(args.rounds):  # alternate, so drift on a shared machine hits both
                    alone.append(await run(encoder, items, level))
                    both.append(await run(cascade, items, level))
                calls = judge_calls(upstream_url) / (args.rounds * len(items))
                rows.append((workload, level, merged(alone), merged(both), calls))
    finally:
        await cascade.close()
        await confirmer.close()
        await encoder.close()
    return rows


def merged(runs: list[Run]) -> Cell:
    return summarise(sum(w for w, _, _ in runs), [x for _, ls, _ in runs for x in ls],
                     [s for _, _, ss in runs for s in ss])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cascade", description=__doc__.splitlines()[0])
    ap.add_argument("--checks", type=int, default=48, help="checks per configuration, workload and level, per round")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds of encoder alone / cascade per cell")
    ap.add_argument("--judge-delay-ms", type=float, default=0.0,
                    help="scripted time the span detector takes per call (0: the double's own few ms)")
    ap.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0: its default)")
    args = ap.parse_args(argv)
    port = launch.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        child = launch.start_upstream(port, Path(tmp) / "upstream.log")
        try:
            launch.wait_upstream(port, child)
            url = f"http://127.0.0.1:{port}"
            script(url, args.judge_delay_ms)
            rows = asyncio.run(bench(url, args))
        finally:
            child.stop()
    print(f"{args.checks} checks x {args.rounds} rounds per cell; encoder: the shipped model on CPU; confirmer: "
          f"the scripted span judge over HTTP (+{args.judge_delay_ms:g} ms scripted per call)")
    head = (f"{'workload':<14}{'conc':>5}{'enc chk/s':>11}{'casc chk/s':>11}{'ratio':>7}{'enc p50':>9}{'casc p50':>10}"
            f"{'ratio':>7}{'enc p95':>9}{'casc p95':>10}{'calls/chk':>10}{'flagged enc/casc':>18}")
    print(head)
    for workload, level, alone, both, calls in rows:
        print(f"{workload:<14}{level:>5}{alone.checks_per_s:>11.1f}{both.checks_per_s:>11.1f}"
              f"{both.checks_per_s / alone.checks_per_s:>7.2f}{alone.p50_ms:>9.1f}{both.p50_ms:>10.1f}"
              f"{both.p50_ms / alone.p50_ms:>7.2f}{alone.p95_ms:>9.1f}{both.p95_ms:>10.1f}{calls:>10.2f}"
              f"{f'{alone.flagged}/{both.flagged}':>18}")
        if both.unavailable or alone.unavailable:
            print(f"  unavailable: encoder {alone.unavailable}, cascade {both.unavailable}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
