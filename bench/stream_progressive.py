"""Progressive release against passthrough and hold, side by side in one run, through Envoy.

One Envoy (the shipped ``envoy.yaml``), one processor (the shipped detector), the scripted
upstream streaming grounded answers one token per event at a model server's pace (default 30
tokens/s), answers of 3 to 12 sentences. Three routes of the same config, picked per request:

  passthrough   actions [header, body], streaming: passthrough (released as it comes, checked at the end)
  hold          actions [header, block], streaming: hold (Envoy holds the whole answer, then the check)
  progressive   actions [header, block], streaming: progressive (released sentence by sentence)

The requests go one at a time, the three routes interleaved per answer (machine drift hits all
three alike). Per route: the median time to the first byte of answer text (first-answer-byte)
and to the end of the stream, their ratios to passthrough, progressive's first byte against
passthrough's plus the time the upstream takes for the first sentence plus 100 ms (the goal),
and the processor's CPU seconds per streamed answer (its process's user+system time over the
route's requests, from /proc).

Run: ``python -m bench.stream_progressive [--rounds 2] [--tokens-per-s 30]``.

``--cost`` compares the processor CPU of ``progressive`` against ``hold`` in one run (the two
routes interleaved per answer) on two answers of the fourth adversarial round (PR7): an ordinary
one (60 sentences of about 75 characters, the context the same text, events 10 ms apart) and a
flood of 1,500 one-word sentences (``Yes!``, events 0.5 ms apart). Goal: progressive within 2x
hold's CPU on the ordinary answer, within 3x on the flood. Run:
``python -m bench.stream_progressive --cost [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from truthlens.testing import launch

FACTS = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "It is named after the engineer Gustave Eiffel, whose company designed and built the tower.",
    "The tower was built from 1887 to 1889 as the entrance arch to the 1889 World's Fair.",
    "It is 330 metres tall, about the same height as an 81-storey building.",
    "It was the tallest man-made structure in the world until the Chrysler Building in New York was finished in 1930.",
    "The tower has three levels for visitors, with restaurants on the first and second levels.",
    "The upper platform of the top level is 276 metres above the ground, the highest observation deck in the EU.",
    "Tickets can be bought to ascend by stairs or lift to the first and second levels.",
    "The climb from ground level to the first level is over 300 steps.",
    "The tower is repainted every seven years to protect it from rust.",
    "About 60 tonnes of paint are used each time the tower is repainted.",
    "It is the most visited monument with an entrance fee in the world.",
]
CONTEXT = [" ".join(FACTS)]
SENTENCES = (3, 6, 9, 12)
ROUTES = ("passthrough", "hold", "progressive")
PATH = "/v1/chat/completions"
_TEXT = re.compile(rb'"content": ?"[^"]')  # a delta with answer text (not the role chunk's "")


def _decision(name: str, streaming: str, actions: list[str]) -> dict[str, Any]:
    return {"name": name, "priority": 100,
            "rules": {"operator": "AND", "conditions": [
                {"type": "path", "prefix": PATH}, {"type": "header", "name": "x-bench-route", "value": name}]},
            "plugins": [{"type": "hallucination", "configuration": {"streaming": streaming, "actions": actions}}]}


DECISIONS = [
    _decision("passthrough", "passthrough", ["header", "body"]),
    _decision("hold", "hold", ["header", "block"]),
    _decision("progressive", "progressive", ["header", "block"]),
]


@dataclass
class Sample:
    first_answer_byte_s: float
    total_s: float


@dataclass
class RouteResult:
    samples: list[Sample] = field(default_factory=list)
    cpu_s: float = 0.0


def _answer(n: int) -> str:
    return " ".join(FACTS[:n])


def _ask(port: int, route: str, n: int | str, context: list[str] = CONTEXT) -> Sample:
    body = {"model": "test-model", "stream": True, "truthlens_context": context,
            "messages": [{"role": "user", "content": f"answer-{n}: tell me about the Eiffel Tower"}]}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.monotonic()
    first: float | None = None
    buffer = b""
    try:
        conn.request("POST", PATH, body=json.dumps(body),
                     headers={"content-type": "application/json", "x-bench-route": route})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"{route}: HTTP {resp.status}: {resp.read()[:200]!r}")
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            if first is None:
                buffer += chunk
                if _TEXT.search(buffer):
                    first = time.monotonic()
    finally:
        conn.close()
    end = time.monotonic()
    if first is None:
        raise RuntimeError(f"{route}: no answer text arrived")
    return Sample(first - started, end - started)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its children that were waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _processor_pids(root: int) -> list[int]:
    """The processor's process and its worker children (``--workers``)."""
    pids = [root]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == root:
                pids.append(int(entry.name))
    return pids


def run(rounds: int, tokens_per_s: float) -> dict[str, RouteResult]:
    delay = 1.0 / tokens_per_s
    script = [{"name": f"answer-{n}", "match": {"user": f"answer-{n}:"},
               "reply": {"content": _answer(n), "chunk_tokens": 1, "chunk_delay_s": delay}} for n in SENTENCES]
    results = {route: RouteResult() for route in ROUTES}

    def measure(port: int, cpu: Any) -> None:
        for route in ROUTES:  # warm up: the detector's first run, connections
            _ask(port, route, SENTENCES[0])
        for _ in range(rounds):
            for n in SENTENCES:
                for route in ROUTES:
                    before = cpu()
                    results[route].samples.append(_ask(port, route, n))
                    results[route].cpu_s += cpu() - before

    _with_stack(script, measure)
    return results


def _with_stack(script: list[dict[str, Any]], measure: Any) -> None:
    """One Envoy, one processor and the scripted upstream; ``measure(port, cpu)`` with Envoy's
    listener port and a function giving the processor's CPU seconds so far."""
    with tempfile.TemporaryDirectory(prefix="stream-progressive-") as tmp:
        work = Path(tmp)
        ports = launch.free_ports()
        script_path = work / "script.yaml"
        script_path.write_text(yaml.safe_dump(script), encoding="utf-8")
        config_path = work / "config.yaml"
        config_path.write_text(launch.config_yaml(None, f"http://127.0.0.1:{ports.upstream}/v1",
                                                  decisions=DECISIONS), encoding="utf-8")
        with launch.running_stack(config_path, ports, work, script=script_path, processor_timeout_s=120) as stack:
            pids = _processor_pids(stack.processor.proc.pid)
            measure(ports.listener, lambda: sum(_cpu_seconds(p) for p in pids))


def report(results: dict[str, RouteResult], tokens_per_s: float) -> None:
    first_sentence_s = len(FACTS[0].split()) / tokens_per_s
    base = results["passthrough"]
    base_first = statistics.median(s.first_answer_byte_s for s in base.samples)
    base_total = statistics.median(s.total_s for s in base.samples)
    print(f"{len(base.samples)} streamed answers per route ({', '.join(map(str, SENTENCES))} sentences), "
          f"{tokens_per_s:g} tokens/s; first sentence {first_sentence_s * 1000:.0f} ms at that pace")
    print(f"{'route':<12} {'first byte p50':>15} {'ratio':>7} {'end p50':>9} {'ratio':>7} {'CPU/answer':>11}")
    for route, result in results.items():
        first = statistics.median(s.first_answer_byte_s for s in result.samples)
        total = statistics.median(s.total_s for s in result.samples)
        cpu = result.cpu_s / len(result.samples)
        print(f"{route:<12} {first * 1000:>12.0f} ms {first / base_first:>6.2f}x {total * 1000:>6.0f} ms "
              f"{total / base_total:>6.3f}x {cpu * 1000:>8.0f} ms")
    prog = results["progressive"]
    prog_first = statistics.median(s.first_answer_byte_s for s in prog.samples)
    prog_total = statistics.median(s.total_s for s in prog.samples)
    ends = [p.total_s / b.total_s for p, b in zip(prog.samples, base.samples, strict=True)]
    goal_first = base_first + first_sentence_s + 0.1
    print(f"progressive first byte: {prog_first * 1000:.0f} ms against the goal of passthrough + one sentence "
          f"+ 100 ms = {goal_first * 1000:.0f} ms: {'met' if prog_first <= goal_first else 'missed'}")
    print(f"progressive end: {prog_total / base_total:.3f}x passthrough's (per answer: "
          f"{min(ends):.3f}x to {max(ends):.3f}x); goal within 1.10x: "
          f"{'met' if prog_total <= 1.10 * base_total else 'missed'}")


# -- progressive's CPU against hold's (--cost) ---------------------------------------------------

TOWNS = ["Lyon", "Nantes", "Lille", "Rouen", "Dijon", "Reims", "Nancy", "Metz", "Brest", "Tours"]
ORDINARY = " ".join(f"The museum in {TOWNS[i % len(TOWNS)]} opened its {i}th gallery to visitors on a quiet morning."
                    for i in range(1, 61))
FLOOD = " ".join(["Yes!"] * 1500)
COST_CASES = {  # name: (answer, context, seconds between events)
    "ordinary": (ORDINARY, [ORDINARY], 0.010),
    "flood": (FLOOD, CONTEXT, 0.0005),
}
COST_ROUTES = ("hold", "progressive")


def run_cost(rounds: int) -> dict[str, dict[str, RouteResult]]:
    script = [{"name": name, "match": {"user": f"answer-{name}:"},
               "reply": {"content": answer, "chunk_tokens": 1, "chunk_delay_s": delay}}
              for name, (answer, _, delay) in COST_CASES.items()]
    results = {name: {route: RouteResult() for route in COST_ROUTES} for name in COST_CASES}

    def measure(port: int, cpu: Any) -> None:
        for route in COST_ROUTES:  # warm up
            _ask(port, route, "ordinary", [ORDINARY])
        for _ in range(rounds):
            for name, (_, context, _) in COST_CASES.items():
                for route in COST_ROUTES:
                    before = cpu()
                    results[name][route].samples.append(_ask(port, route, name, context))
                    results[name][route].cpu_s += cpu() - before

    _with_stack(script, measure)
    return results


def report_cost(results: dict[str, dict[str, RouteResult]]) -> None:
    goals = {"ordinary": 2.0, "flood": 3.0}
    print(f"{'answer':<10} {'route':<12} {'CPU/answer':>11} {'end p50':>9}  ratio to hold")
    for name, routes in results.items():
        hold_cpu = routes["hold"].cpu_s / len(routes["hold"].samples)
        for route, result in routes.items():
            cpu = result.cpu_s / len(result.samples)
            end = statistics.median(s.total_s for s in result.samples)
            ratio = cpu / hold_cpu
            met = "met" if ratio <= goals[name] else "missed"
            goal = "" if route == "hold" else f"  (goal within {goals[name]:g}x: {met})"
            print(f"{name:<10} {route:<12} {cpu * 1000:>8.0f} ms {end:>7.2f} s  {ratio:.2f}x{goal}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="answers of each length per route")
    parser.add_argument("--tokens-per-s", type=float, default=30.0, help="the upstream's pace")
    parser.add_argument("--cost", action="store_true", help="progressive's CPU against hold's on round 4's answers")
    args = parser.parse_args()
    if args.cost:
        report_cost(run_cost(args.rounds))
    else:
        report(run(args.rounds, args.tokens_per_s), args.tokens_per_s)


if __name__ == "__main__":
    main()
