"""A live exchange's latency while ``POST /v1/check`` is loaded, in one run.

The stack: the shipped ``envoy.yaml``, the scripted upstream (a fixed answer) and ``truthlens serve``
with the shipped config and the shipped detector (ONNX Runtime). A live client sends one checked chat
exchange (``truthlens_context``, the default route) through Envoy every ``--every-s``; first alone
(``idle``), then while ``--dry-clients`` clients post dry-run batches back to back (``loaded``):
``--items`` items each, every item a ``--context-chars`` context (the lighthouse text of the
adversarial notes) and a wrong-year answer. Prints the live latency (p50, p90, max) of each phase
and the dry runs' statuses.

``--baseline-src DIR`` runs the same phases a second time with the processor imported from another
build's ``src`` (e.g. ``git archive <commit> src | tar -x -C /tmp/base``): before and after in one
run, on the same machine state.

Run: ``python -m bench.dry_run_contention [--seconds 20] [--dry-clients 2] [--items 16]
[--baseline-src /tmp/base/src] [--chunk-aggregation max]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from truthlens.testing import launch

PASSAGE = ("The Eiffel Tower is a wrought-iron lattice tower in Paris. It was designed by the company of "
           "Gustave Eiffel and completed in 1889 as the entrance arch to the World's Fair.")
ANSWER = "The Eiffel Tower was completed in 1925 and designed by Albert Speer."
LIVE_BODY = json.dumps({"model": "bench-model", "truthlens_context": [PASSAGE],
                        "messages": [{"role": "user", "content": "When was the Eiffel Tower completed?"}]}).encode()
LIGHTHOUSE = "The lighthouse number {n} is painted white and stands on a rock near the harbour. "


@dataclass(slots=True)
class Phase:
    name: str
    live_ms: list[float] = field(default_factory=list)
    live_errors: int = 0
    dry_statuses: dict[int, int] = field(default_factory=dict)
    dry_ms: list[float] = field(default_factory=list)


def dry_body(items: int, context_chars: int) -> bytes:
    sentences: list[str] = []
    while len(sentences) * len(LIGHTHOUSE) < context_chars:
        sentences.append(LIGHTHOUSE.format(n=len(sentences)))
    context = "".join(sentences)[:context_chars]
    item = {"context": [context], "question": "When was the Eiffel Tower completed?", "answer": ANSWER}
    return json.dumps({"items": [item] * items}).encode()


def post(url: str, body: bytes, timeout_s: float = 120.0) -> tuple[int, float]:
    request = urllib.request.Request(url, data=body, method="POST", headers={"content-type": "application/json"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            resp.read()
            status = int(resp.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        status = int(exc.code)
    return status, (time.perf_counter() - started) * 1000.0


def run_phase(name: str, live_url: str, dry_url: str | None, body: bytes, args: argparse.Namespace) -> Phase:
    phase = Phase(name)
    stop = threading.Event()
    lock = threading.Lock()

    def dry_client() -> None:
        assert dry_url is not None
        while not stop.is_set():
            try:
                status, ms = post(dry_url, body)
            except OSError:
                status, ms = -1, 0.0
            with lock:
                phase.dry_statuses[status] = phase.dry_statuses.get(status, 0) + 1
                phase.dry_ms.append(ms)

    clients = [threading.Thread(target=dry_client, daemon=True) for _ in range(args.dry_clients if dry_url else 0)]
    for client in clients:
        client.start()
    if clients:
        time.sleep(args.ramp_s)  # the dry runs are in the detector before the first live exchange
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        try:
            status, ms = post(live_url, LIVE_BODY, timeout_s=60)
        except OSError:
            status, ms = -1, 0.0
        if status == 200:
            phase.live_ms.append(ms)
        else:
            phase.live_errors += 1
        time.sleep(args.every_s)
    stop.set()
    for client in clients:
        client.join(180)
    return phase


def measure(build: str, src: str | None, args: argparse.Namespace, work: Path, ports: launch.EnvoyPorts,
            config: Path) -> list[Phase]:
    env = None
    if src is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    metrics = launch.free_port()
    proc = launch.start_processor(config, f"127.0.0.1:{ports.processor}", work / f"processor-{build}.log",
                                  metrics_listen=f"127.0.0.1:{metrics}", env=env)
    try:
        launch.wait_until(lambda: launch.http_ok(f"http://127.0.0.1:{metrics}/readyz"), "the processor", proc, 180)
        live = f"http://127.0.0.1:{ports.listener}/v1/chat/completions"
        dry = f"http://127.0.0.1:{metrics}/v1/check"
        body = dry_body(args.items, args.context_chars)
        for _ in range(3):  # warm-up: first runs load the session's kernels
            post(live, LIVE_BODY)
        return [run_phase(f"{build} idle", live, None, body, args),
                run_phase(f"{build} loaded", live, dry, body, args)]
    finally:
        proc.stop()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(phases: list[Phase], args: argparse.Namespace) -> None:
    print(f"live exchange every {args.every_s}s for {args.seconds}s per phase; dry run: {args.dry_clients} "
          f"clients x {args.items} items x {args.context_chars} context chars")
    print(f"{'phase':<22} {'live n':>6} {'err':>4} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8}  "
          "dry runs (status: n, p50 ms)")
    for p in phases:
        dry = ", ".join(f"{s}: {n}" for s, n in sorted(p.dry_statuses.items())) or "-"
        dry_p50 = f", p50 {statistics.median(p.dry_ms):.0f} ms" if p.dry_ms else ""
        print(f"{p.name:<22} {len(p.live_ms):>6} {p.live_errors:>4} {pct(p.live_ms, 0.5):>8.0f} "
              f"{pct(p.live_ms, 0.9):>8.0f} {max(p.live_ms, default=float('nan')):>8.0f}  {dry}{dry_p50}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="each phase's length")
    parser.add_argument("--every-s", type=float, default=0.3, help="pause between live exchanges")
    parser.add_argument("--dry-clients", type=int, default=2, help="clients posting dry runs back to back")
    parser.add_argument("--items", type=int, default=16, help="items per dry-run batch")
    parser.add_argument("--context-chars", type=int, default=100_000, help="each item's context")
    parser.add_argument("--ramp-s", type=float, default=2.0, help="dry runs alone before live traffic starts")
    parser.add_argument("--baseline-src", help="another build's src directory: the same phases with its processor")
    parser.add_argument("--chunk-aggregation", help="detector.chunk_aggregation instead of the shipped config's "
                        "(max: no embedder ranks the contexts, to see its share of the contention)")
    args = parser.parse_args(argv)
    ports = launch.EnvoyPorts(*(launch.free_port() for _ in range(4)))
    with tempfile.TemporaryDirectory(prefix="truthlens-dry-run-") as tmp:
        work = Path(tmp)
        script = work / "script.yaml"
        script.write_text(yaml.safe_dump([{"name": "answer", "match": {}, "reply": {"content": ANSWER}}]))
        config = work / "config.yaml"
        doc = yaml.safe_load(launch.config_yaml(None, f"http://127.0.0.1:{ports.upstream}/v1"))
        if args.chunk_aggregation:
            doc["detector"]["chunk_aggregation"] = args.chunk_aggregation
        config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        upstream = launch.start_upstream(ports.upstream, work / "upstream.log", script)
        envoy = launch.start_envoy(launch.render_envoy_config(ports), work)
        try:
            launch.wait_upstream(ports.upstream, upstream)
            launch.wait_envoy(ports.admin, envoy)
            phases = []
            if args.baseline_src:
                phases += measure("baseline", str(Path(args.baseline_src).resolve()), args, work, ports, config)
            phases += measure("this build", None, args, work, ports, config)
        finally:
            envoy.stop()
            upstream.stop()
    report(phases, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
