"""Soak and fault injection through the real stack (loopback only, bounded in time).

A mixed load (``bench/soak_traffic.py``: lightweight and standard modes, plain and streaming,
grounded and hallucinated answers, malformed requests, gzip bodies, upstream 500s, streams the
upstream cuts) runs through a real Envoy into the real processor (two worker processes, the
shipped ONNX detector) and the scripted upstream — the only scripted part. While it runs:

  * the upstream process is killed (SIGKILL) with streams in flight, and restarted;
  * a route's detection budget is far below what the detector needs (a stalled detector);
  * the premium route's verifier and judge models answer 500 (verifier down);
  * the config file is replaced with an invalid one, then with a valid one;
  * one processor worker gets SIGTERM (in-flight exchanges drain, the supervisor restarts it).

Faults happen in the first half, so the second half shows whether memory levels off.
Every response is judged intact / expected error / lost / corrupted. Reports requests, latency
p50/p99 per kind, outcomes by reason, and the processor's RSS over time with the slope of a
linear fit over the second half (MB/min).

Run: ``python -m bench.soak [--duration-s 300] [--concurrency 4] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from harness import Stack

from bench import soak_traffic as traffic
from truthlens.testing import launch

PATH = "/v1/chat/completions"


class SoakStack(Stack):
    """The e2e stack whose upstream starts with the soak's script (it survives a restart)."""

    def __init__(self, workdir: Path, *, workers: int) -> None:
        super().__init__(workdir, None, workers=workers)
        self.script_path = workdir / "script.json"

    def start(self) -> None:
        import json

        self.script_path.write_text(json.dumps(traffic.script()), encoding="utf-8")
        super().start()
        self.set_script(traffic.script())

    def start_upstream(self) -> None:
        child = launch.start_upstream(self.ports.upstream, self.workdir / "upstream.log", self.script_path)
        self._children["upstream"] = child
        launch.wait_upstream(self.ports.upstream, child)

    def kill_upstream(self) -> None:
        """SIGKILL: no graceful close, streams in flight are cut."""
        child = self._children.pop("upstream")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        child.stop()

    def processor_pids(self) -> list[int]:
        """The supervisor and its descendants (workers, multiprocessing's resource tracker)."""
        root = self._children["processor"].proc.pid
        return [root, *_children_of(root)]

    def worker_pids(self) -> list[int]:
        return [pid for pid in self.processor_pids()[1:] if b"spawn_main" in _cmdline(pid)]

    def soak_config(self, revision: int) -> str:
        return self.config_yaml(decisions=traffic.decisions(revision), models=traffic.MODELS)


def _children_of(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    out: list[int] = []
    for child in (int(p) for p in text.split()):
        out += [child, *_children_of(child)]
    return out


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def rss_mb(pids: list[int]) -> float:
    total_kb = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
    return total_kb / 1024


def slope_per_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) in MB/min."""
    if len(points) < 2:
        return 0.0
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return 0.0 if den == 0 else 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den


@dataclass
class Tally:
    sent: int = 0
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)  # (outcome, reason)
    unchecked: Counter[str] = field(default_factory=Counter)  # ok responses without a verdict, by kind
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    failures: list[str] = field(default_factory=list)  # lost / corrupted, with when and what
    fault_log: list[str] = field(default_factory=list)
    fault_windows: list[tuple[str, float, float]] = field(default_factory=list)

    def explained_by(self, started: float, ended: float) -> str | None:
        """The upstream kill explains a failure of an exchange that overlapped it."""
        for name, t0, t1 in self.fault_windows:
            if started <= t1 and ended >= t0:
                return name
        return None


async def one_request(
    session: aiohttp.ClientSession, url: str, kind: traffic.Kind, seq: int, tally: Tally, t0: float
) -> None:
    headers = {"content-type": "application/json", "x-soak-route": kind.route}
    if kind.expect == "gzip":
        headers["accept-encoding"] = "gzip"
    started = time.monotonic()
    status, resp_headers, body, complete = 0, {}, b"", False
    error = ""
    try:
        async with session.post(url, data=traffic.request_body(kind, seq), headers=headers) as resp:
            status = resp.status
            resp_headers = {k.lower(): v for k, v in resp.headers.items()}
            try:
                body = await resp.content.read()
                complete = True
            except aiohttp.ClientPayloadError as exc:  # the connection ended mid-body
                error = f"payload: {exc}"
    except (TimeoutError, aiohttp.ClientError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    ended = time.monotonic()
    tally.sent += 1
    if status == 0:
        verdict = traffic.Verdict("lost", f"no response ({error[:80]})", False)
    else:
        verdict = traffic.classify(kind, status, resp_headers, body, complete)
    if verdict.outcome in ("lost", "corrupted"):
        cause = tally.explained_by(started, ended)
        if cause is not None and (status in (0, 502, 503) or not complete or kind.stream):
            verdict = traffic.Verdict("expected_error", f"{cause} ({verdict.reason})", verdict.checked)
        else:
            tally.failures.append(
                f"t={started - t0:6.1f}s {kind.name}: {verdict.outcome} {verdict.reason} status={status} {error[:120]}"
            )
    reason = verdict.reason
    if verdict.outcome == "ok" and reason != "checked":
        reason = f"{reason} ({kind.name})"  # why a check was skipped, and on which kind
    tally.outcomes[(verdict.outcome, reason)] += 1
    if verdict.outcome == "ok":
        tally.latencies[kind.name].append(ended - started)
        if not verdict.checked:
            tally.unchecked[kind.name] += 1
    if status == 0 or status >= 500:
        await asyncio.sleep(0.1)  # like a client's retry backoff: no busy loop while a fault lasts


async def load(url: str, deadline: float, concurrency: int, tally: Tally, t0: float, seed: int) -> None:
    rng = random.Random(seed)
    seq = 0
    timeout = aiohttp.ClientTimeout(total=150)
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency), timeout=timeout, auto_decompress=False
    ) as session:

        async def worker() -> None:
            nonlocal seq
            while time.monotonic() < deadline:
                seq += 1
                await one_request(session, url, traffic.pick(rng), seq, tally, t0)

        await asyncio.gather(*(worker() for _ in range(concurrency)))


async def sample_memory(stack: SoakStack, deadline: float, t0: float, out: list[tuple[float, float]]) -> None:
    while time.monotonic() < deadline:
        out.append((time.monotonic() - t0, rss_mb(stack.processor_pids())))
        await asyncio.sleep(2.0)


async def inject_faults(stack: SoakStack, duration_s: float, tally: Tally, t0: float) -> None:
    def note(text: str) -> None:
        tally.fault_log.append(f"t={time.monotonic() - t0:6.1f}s {text}")

    async def at(fraction: float) -> None:
        await asyncio.sleep(max(0.0, t0 + fraction * duration_s - time.monotonic()))

    await at(0.10)
    # Open-ended until the upstream is back: exchanges failing meanwhile are explained.
    tally.fault_windows.append(("upstream_killed", time.monotonic(), float("inf")))
    await asyncio.to_thread(stack.kill_upstream)
    note("upstream SIGKILLed with streams in flight")
    await asyncio.sleep(2.0)
    await asyncio.to_thread(stack.start_upstream)
    name, killed, _ = tally.fault_windows[-1]
    tally.fault_windows[-1] = (name, killed, time.monotonic() + 0.5)
    note("upstream restarted")

    await at(0.20)
    result = await asyncio.to_thread(stack.write_config, "version: 1\ndetector: {model: [not, a, path]}\n")
    note(f"config replaced with an invalid file -> {result}")
    await asyncio.sleep(3.0)
    result = await asyncio.to_thread(stack.write_config, stack.soak_config(revision=1))
    note(f"config replaced with a valid file -> {result}")

    await at(0.30)
    workers = stack.worker_pids()
    if workers:
        active = await asyncio.to_thread(stack.metric, "truthlens_streams_active")
        os.kill(workers[0], signal.SIGTERM)
        note(f"SIGTERM to worker pid {workers[0]} (of {len(workers)}); {active:.0f} exchanges in flight on all workers")
        for _ in range(300):
            await asyncio.sleep(0.1)
            now = stack.worker_pids()
            if len(now) == len(workers) and workers[0] not in now:
                note(f"supervisor restarted it (workers now {now})")
                break


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(tally: Tally, memory: list[tuple[float, float]], duration_s: float, args: argparse.Namespace) -> str:
    lines = [
        (
            f"soak: {duration_s:.0f} s, concurrency {args.concurrency}, processor workers {args.workers}, "
            f"{os.cpu_count()} CPUs (shared with other jobs), shipped ONNX detector"
        ),
        f"requests sent: {tally.sent}  ({tally.sent / duration_s:.1f}/s)",
    ]
    by_outcome: Counter[str] = Counter()
    for (outcome, _), n in tally.outcomes.items():
        by_outcome[outcome] += n
    lines.append(
        "outcomes: " + ", ".join(f"{k}={by_outcome.get(k, 0)}" for k in ("ok", "expected_error", "lost", "corrupted"))
    )
    lines.append(
        f"ok but without a verdict (processor bypassed, fail-open): {sum(tally.unchecked.values())} "
        + str(dict(tally.unchecked))
    )
    lines.append("by reason:")
    for (outcome, reason), n in sorted(tally.outcomes.items(), key=lambda kv: (kv[0][0], -kv[1])):
        lines.append(f"  {outcome:15s} {reason:60s} {n:6d}")
    lines.append("latency of ok responses (ms):")
    lines.append(f"  {'kind':36s} {'n':>6s} {'p50':>8s} {'p99':>8s}")
    for name in sorted(tally.latencies):
        vals = tally.latencies[name]
        lines.append(
            f"  {name:36s} {len(vals):6d} {1000 * percentile(vals, 0.5):8.0f} {1000 * percentile(vals, 0.99):8.0f}"
        )
    lines.append("faults:")
    lines += [f"  {f}" for f in tally.fault_log]
    if memory:
        half = [p for p in memory if p[0] >= duration_s / 2]
        lines.append(
            f"processor RSS (supervisor + workers): start {memory[0][1]:.0f} MB, "
            f"max {max(m for _, m in memory):.0f} MB, "
            f"end {memory[-1][1]:.0f} MB; slope over the second half: {slope_per_min(half):+.2f} MB/min "
            f"({len(half)} samples)"
        )
        step = max(1, len(memory) // 12)
        lines.append("  RSS samples: " + ", ".join(f"{t:.0f}s={m:.0f}" for t, m in memory[::step]))
    if tally.failures:
        lines.append(f"lost or corrupted ({len(tally.failures)}):")
        lines += [f"  {f}" for f in tally.failures[:30]]
    return "\n".join(lines)


async def soak(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="truthlens-soak-") as tmp:
        stack = SoakStack(Path(tmp), workers=args.workers)
        try:
            stack.start()
            stack.write_config(stack.soak_config(revision=0))
            url = f"http://127.0.0.1:{stack.ports.listener}{PATH}"
            tally = Tally()
            memory: list[tuple[float, float]] = []
            t0 = time.monotonic()
            deadline = t0 + args.duration_s
            await asyncio.gather(
                load(url, deadline, args.concurrency, tally, t0, args.seed),
                sample_memory(stack, deadline, t0, memory),
                inject_faults(stack, args.duration_s, tally, t0),
            )
            elapsed = time.monotonic() - t0
            print(report(tally, memory, elapsed, args))
            alive = stack.processor_alive()
            print(f"processor alive at the end: {alive}")
            lost = sum(n for (o, _), n in tally.outcomes.items() if o in ("lost", "corrupted"))
            return 0 if lost == 0 and alive else 1
        finally:
            stack.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=300.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    return asyncio.run(soak(args))


if __name__ == "__main__":
    sys.exit(main())
