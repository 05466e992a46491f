"""Every mode against a real model server, side by side in one run: per-mode p50 and what the check adds.

The stack: a real Envoy, the processor (the shipped detector in ONNX Runtime) and llama.cpp's
OpenAI-compatible server (llama-cpp-python) serving Gemma 3 270M base on one thread
(``truthlens.testing.llama_server``; needs its environment, see ``.ci/run``). Every answer and
every re-ask comes from that model. Configurations, in the order they run, each ``--requests``
sequential exchanges of the same grounded question:

  off          the route's check disabled (Envoy → processor → server): the baseline
  lightweight, standard, premium, acr, auto
               the mode's route, options of ``llama_server.MODE_OPTIONS``

Prints per configuration: p50 of the exchange (ms), p50 of the check the processor reports
(``x-truthlens-latency-ms``), the p50 the check adds to ``off`` and the ratio, the verdicts seen
(true / false / unavailable), how many answers went out rewritten, and the p50 of a 4-token probe
straight to the server right after each exchange (a server still busy with abandoned work answers
it late).
Then, with ``--cancellation``: what a client that gives up costs the server. A long answer
(``max_tokens`` 400, on ``/v1/completions``: the chat template would stop it at the first blank
line) is asked for and abandoned after 0.5 s, once as a plain (non-streamed) call
whose connection is closed, once streamed and the stream closed (what the processor's client
does); right after each, a 4-token probe: how long it waited is how long the server kept working
for nobody. Also the long answer's own time, for scale.
Run: ``python -m bench.real_server [--requests 5] [--modes lightweight,premium] [--cancellation]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from truthlens.testing import launch, llama_server

BUDGET_MS = 60_000


def route(name: str, mode: str, options: dict[str, Any], *, enabled: bool = True) -> dict[str, Any]:
    conditions = [{"type": "path", "prefix": "/v1/chat/completions"},
                  {"type": "header", "name": "x-bench-route", "value": name}]
    configuration = {"enabled": enabled, "mode": mode, "actions": ["header", "body"],
                     "budgets": {"detection_ms": 5000, "total_ms": BUDGET_MS}, **options}
    return {"name": f"{name}_route", "priority": 100, "rules": {"operator": "AND", "conditions": conditions},
            "plugins": [{"type": "hallucination", "configuration": configuration}]}


def exchange(port: int, name: str) -> tuple[float, dict[str, str]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(llama_server.grounded_request()).encode(),
        headers={"Content-Type": "application/json", "x-bench-route": name})
    start = time.monotonic()
    with urllib.request.urlopen(request, timeout=300) as resp:
        resp.read()
        headers = {k.lower(): v for k, v in resp.getheaders()}
    return time.monotonic() - start, headers


# A long generation: the base model keeps counting. Asked on /v1/completions, where the chat
# template's stop (a blank line) does not end it early; the server serves a call given up on the
# same way on both endpoints (a non-streamed one runs to its end in a worker thread, a stream
# stops when its client is gone).
LONG_PROMPT = "one, two, three, four, five, six, seven, eight, nine, ten, eleven, twelve, thirteen,"


def abandon(server: llama_server.LlamaServer, *, stream: bool) -> float:
    """Ask for a long answer, give up after 0.5 s (close the connection), then probe: the probe's wait."""
    body = json.dumps({"model": llama_server.SERVED_MODEL, "max_tokens": 400, "temperature": 0.0, "stream": stream,
                       "prompt": LONG_PROMPT}).encode()
    request = urllib.request.Request(f"{server.base_url}/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=0.5) as resp:
            while resp.read(64):  # streamed: read until the timeout closes it
                pass
    except (TimeoutError, OSError):
        pass  # given up: urllib closes the connection
    return server.complete("Say hello.", max_tokens=4, timeout_s=600)


def cancellation(server: llama_server.LlamaServer) -> None:
    body = json.dumps({"model": llama_server.SERVED_MODEL, "max_tokens": 400, "temperature": 0.0,
                       "prompt": LONG_PROMPT}).encode()
    request = urllib.request.Request(f"{server.base_url}/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    start = time.monotonic()
    with urllib.request.urlopen(request, timeout=600) as resp:
        tokens = json.loads(resp.read())["usage"]["completion_tokens"]
    print(f"the long answer itself: {tokens} tokens in {(time.monotonic() - start) * 1000:.0f} ms")
    idle = server.complete("Say hello.", max_tokens=4)
    plain = abandon(server, stream=False)
    streamed = abandon(server, stream=True)
    print(f"probe on an idle server: {idle * 1000:.0f} ms; after abandoning the long answer: "
          f"non-streamed {plain * 1000:.0f} ms, streamed {streamed * 1000:.0f} ms")


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000.0 if values else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--modes", default=",".join(llama_server.MODE_OPTIONS))
    parser.add_argument("--cancellation", action="store_true", help="also measure abandoned calls")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    reason = llama_server.unavailable_reason()
    if reason is not None:
        raise SystemExit(f"cannot run: {reason}")
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        server = stack.enter_context(llama_server.running(workdir))
        if args.cancellation:
            cancellation(server)
        ports = launch.free_ports(upstream=server.port)
        routes = [route("off", "lightweight", {}, enabled=False)]
        routes += [route(m, m, llama_server.MODE_OPTIONS[m]) for m in modes]
        config = workdir / "config.yaml"
        config.write_text(launch.config_yaml(None, server.base_url, decisions=routes, models=llama_server.MODELS),
                          encoding="utf-8")
        stack.enter_context(launch.running_stack(config, ports, workdir, own_upstream=False, processor_timeout_s=120))
        exchange(ports.listener, "off")  # warm-up: the model's first prompt, the detector's first run
        rows: dict[str, dict[str, Any]] = {}
        for name in ["off", *modes]:
            walls, checks, probes = [], [], []
            verdicts: Counter[str] = Counter()
            rewritten = 0
            for _ in range(args.requests):
                wall, headers = exchange(ports.listener, name)
                walls.append(wall)
                if "x-truthlens-latency-ms" in headers:
                    checks.append(float(headers["x-truthlens-latency-ms"]) / 1000.0)
                verdicts[headers.get("x-truthlens-detected", "-")] += 1
                rewritten += headers.get("x-truthlens-action") == "rewritten"
                probes.append(server.complete("Say hello.", max_tokens=4))
            rows[name] = {"wall": p50_ms(walls), "check": p50_ms(checks), "probe": p50_ms(probes),
                          "verdicts": dict(verdicts), "rewritten": rewritten}
    base = rows["off"]["wall"]
    print(f"real model server: llama.cpp (llama-cpp-python) + Gemma 3 270M base, 1 thread; "
          f"{args.requests} exchanges per configuration, the same grounded question")
    print(f"{'configuration':<12} {'p50 ms':>9} {'check p50':>10} {'added ms':>9} {'ratio':>6} "
          f"{'probe p50':>10}  verdicts / rewritten")
    for name, row in rows.items():
        added = row["wall"] - base
        print(f"{name:<12} {row['wall']:>9.0f} {row['check']:>10.0f} {added:>9.0f} {row['wall'] / base:>6.2f} "
              f"{row['probe']:>10.0f}  {row['verdicts']} / {row['rewritten']}")


if __name__ == "__main__":
    main()
