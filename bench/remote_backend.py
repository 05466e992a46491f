"""In-process detector vs the same model on a Triton server, side by side, in one run.

Starts a real ``tritonserver`` on loopback (``src/truthlens/testing/model_server.py``: nvidia-pytriton's
binary, the model in ONNX Runtime inside the bound function) hosting the detector model,
then sends the same checks to ``backend: onnx`` (in this process) and ``backend: remote``
(Open Inference Protocol over gRPC) at concurrency 1, 8 and 32 and prints checks/s, p50 and
p99 latency for each, the CPU each side spent per check (this process = the gateway's share;
the Triton process group = the model server's), plus whether every input got the same verdict.

Verdicts are compared at concurrency 1, where both sides run byte-identical batches (an int8
model's dynamic quantisation scales activations per batch, so logits move slightly with what
shares a batch, in-process too); at higher concurrency the bench counts verdicts that differ.
On a single CPU host the two compete for the same cores: the numbers measure what the
protocol, the extra hop and Triton's batcher cost, not what a GPU pool gains.

    TRUTHLENS_TRITON_PYTHON=.triton/bin/python python -m bench.remote_backend
    python -m bench.remote_backend --checks 64 --model DIR --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.manifest import resolve_model_dir
from truthlens.detector.types import Detection, DetectionInput, Detector, DetectorSettings, RemoteSettings
from truthlens.testing import model_server

PASSAGES = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It is 330 metres tall.",
    "It was designed by the engineering company of Gustave Eiffel and completed in March 1889 for the World's Fair.",
    "The tower received 5.9 million visitors in 2022 and is the most visited paid monument in the world.",
    "Its three levels hold restaurants and an observation deck 276 metres above the ground.",
)
QUESTION = "Tell me about the Eiffel Tower: its height, designer, completion and visitors."
ANSWERS = (
    "The Eiffel Tower is 330 metres tall and was completed in March 1889.",
    "It was designed by Gustave Eiffel's company for the World's Fair.",
    "The tower is 410 metres tall and was completed in 1925 by Albert Speer.",
    "It received 5.9 million visitors in 2022.",
    "It received 12 million visitors in 2015 and has a casino on its top level.",
    "The observation deck is 276 metres above the ground.",
)


def inputs(count: int) -> list[DetectionInput]:
    """``count`` checks: short ones and ones whose context spans several rows (as in RAG)."""
    items = []
    for i in range(count):
        answer = ANSWERS[i % len(ANSWERS)]
        if i % 3 == 2:  # a long context: many passages, the relevant ones among them
            filler = [f"Archive note {k}: the ferry line {k} ran {k * 3} crossings in {1950 + k}." for k in range(40)]
            context = filler[:20] + list(PASSAGES) + filler[20:]
        else:
            context = list(PASSAGES)
        items.append(DetectionInput(context, QUESTION, answer))
    return items


@dataclasses.dataclass
class Row:
    backend: str
    concurrency: int
    checks_per_s: float
    p50_ms: float
    p99_ms: float
    unavailable: int
    gateway_cpu_ms: float  # CPU of this process per check (tokenising, planning, scoring; the model too in-process)
    server_cpu_ms: float  # CPU of the Triton process group per check (0 in-process)


async def run(
    detector: Detector, items: Sequence[DetectionInput], concurrency: int
) -> tuple[list[Detection], list[float], float]:
    """Every item once, ``concurrency`` at a time; results in item order, latencies, wall time."""
    results: list[Detection | None] = [None] * len(items)
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(items)):
        queue.put_nowait(i)

    async def worker() -> None:
        while not queue.empty():
            i = queue.get_nowait()
            started = time.perf_counter()
            results[i] = await detector.detect(items[i], threshold=0.5)
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return [r for r in results if r is not None], latencies, wall


def group_cpu_s(pgid: int | None) -> float:
    """CPU seconds (user + system) of every live process in group ``pgid`` (Linux /proc)."""
    if pgid is None:
        return 0.0
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp, ...
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def bench(model_dir: str | None, url: str, server_pgid: int | None, checks: int, levels: Sequence[int],
                threads: int) -> dict[str, object]:
    base = DetectorSettings(model_dir=model_dir, provider="cpu", intra_op_threads=threads, max_batch_size=16)
    local = create_detector(base)
    remote = create_detector(dataclasses.replace(
        base, backend="remote", max_in_flight=4, remote=RemoteSettings(url=url, timeout_ms=60_000)))
    items = inputs(checks)
    rows: list[Row] = []
    mismatches: dict[int, int] = {}
    try:
        for detector in (local, remote):  # warm both (sessions, Triton's first requests)
            await run(detector, items[:6], 2)
        for level in levels:
            outcomes = {}
            for name, detector in (("in-process", local), ("remote (Triton)", remote)):
                cpu, server_cpu = time.process_time(), group_cpu_s(server_pgid)
                results, latencies, wall = await run(detector, items, level)
                cpu, server_cpu = time.process_time() - cpu, group_cpu_s(server_pgid) - server_cpu
                outcomes[name] = results
                rows.append(Row(name, level, len(items) / wall, statistics.median(latencies),
                                percentile(latencies, 0.99), sum(r.status == "unavailable" for r in results),
                                1000 * cpu / len(items), 1000 * server_cpu / len(items) if detector is remote else 0.0))
            a, b = outcomes["in-process"], outcomes["remote (Triton)"]
            mismatches[level] = sum(x.status != y.status for x, y in zip(a, b, strict=True))
    finally:
        await local.close()
        await remote.close()
    return {"checks": checks, "rows": [dataclasses.asdict(r) for r in rows], "verdict_mismatches": mismatches}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="detector model directory (default: the shipped model)")
    ap.add_argument("--checks", type=int, default=96, help="checks per backend and concurrency level")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads in-process (0: default)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)
    reason = model_server.unavailable_reason()
    if reason is not None:
        print(f"cannot start Triton here: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp, model_server.running(resolve_model_dir(args.model), Path(tmp)) as server:
        pgid = server.child.proc.pid if server.child is not None else None  # the child leads its group
        result = asyncio.run(bench(args.model, server.grpc_url, pgid, args.checks, args.concurrency, args.threads))
    print(f"{args.checks} checks per cell; model {resolve_model_dir(args.model)}")
    print(f"{'backend':<18}{'conc':>5}{'checks/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'unavail':>8}"
          f"{'gw CPU ms/check':>17}{'server CPU ms/check':>21}")
    for row in result["rows"]:  # type: ignore[union-attr]
        print(f"{row['backend']:<18}{row['concurrency']:>5}{row['checks_per_s']:>10.1f}"
              f"{row['p50_ms']:>9.0f}{row['p99_ms']:>9.0f}{row['unavailable']:>8}"
              f"{row['gateway_cpu_ms']:>17.0f}{row['server_cpu_ms']:>21.0f}")
    for level, count in result["verdict_mismatches"].items():  # type: ignore[union-attr]
        agreement = "all agree" if count == 0 else f"{count} differ"
        print(f"verdicts at concurrency {level}: {agreement} ({args.checks} inputs)")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    mismatched = sum(result["verdict_mismatches"].values())  # type: ignore[union-attr]
    return 0 if mismatched == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
