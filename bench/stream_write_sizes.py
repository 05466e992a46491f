"""Does the processor's CPU per streamed answer depend on how finely the upstream cuts its writes?

One Envoy (the shipped ``envoy.yaml``), one processor (the shipped detector), and a raw-socket
upstream (scripted: the test double) that answers every request with the same chat stream
(one word per event, chunked framing), written either one event per write or one byte per
write (one HTTP chunk per byte, ``--byte-gap-ms`` apart: Envoy then reads, and forwards to the
processor, about one byte at a time). Four routes of one config, picked per request by a header:

  default   the shipped passthrough stream, warned (actions [header, body])
  off       detection off (the processor only removes a verdict the upstream may have written)
  hold      streaming: hold (Envoy buffers the answer; one body message)
  prog      streaming: progressive

Per route and write size: the processor's CPU seconds per answer (user + system time of its
process from /proc, before and after each request) and the ext_proc response-body messages it
received (its metric). Requests go one at a time, routes interleaved.

``--beside COMMIT`` first runs the same with the processor of ``COMMIT``'s code (``git archive``,
``bench/other_build.py``), and prints both tables.

Run: ``python -m bench.stream_write_sizes [--rounds 1] [--byte-gap-ms 1] [--beside COMMIT]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench import other_build
from truthlens.testing import launch
from truthlens.testing.raw_upstream import RawUpstream

S1 = "The Eiffel Tower is a wrought-iron lattice tower in Paris."
S2 = "It was completed in 1889 and designed by the company of Gustave Eiffel."
ROUTES = ("default", "off", "hold", "prog")
WRITES = ("event", "byte")


def _decision(name: str, **plugin: Any) -> dict[str, Any]:
    return {"name": name, "priority": 100,
            "rules": {"operator": "AND", "conditions": [{"type": "header", "name": "x-route", "value": name}]},
            "plugins": [{"type": "hallucination", "configuration": plugin}]}


DECISIONS = [
    _decision("off", enabled=False),
    _decision("hold", streaming="hold", actions=["header", "body"]),
    _decision("prog", streaming="progressive", actions=["header", "block"]),
    {"name": "default", "priority": 10, "rules": {"operator": "AND", "conditions": [
        {"type": "path", "prefix": "/v1/chat/completions"}]},
     "plugins": [{"type": "hallucination",
                  "configuration": {"actions": ["header", "body"], "streaming": "passthrough"}}]},
]


def chat_stream(text: str) -> list[bytes]:
    """The events of a chat stream of ``text``, one word per event."""
    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        doc = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return f"data: {json.dumps(doc)}\n\n".encode()

    words = re.findall(r"\S+\s*", text)
    return [event({"role": "assistant", "content": ""}), *(event({"content": w}) for w in words),
            event({}, "stop"), b"data: [DONE]\n\n"]


class ChunkedUpstream(RawUpstream):
    """Answers every request with ``events`` in chunked framing, cut as ``self.writes`` says."""

    def __init__(self, port: int, events: list[bytes], byte_gap_s: float) -> None:
        self.events = events
        self.byte_gap_s = byte_gap_s
        self.writes = "event"
        super().__init__(port, self._chunked)

    def _chunked(self, conn: socket.socket, _body: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                     b"connection: close\r\n\r\n")
        whole = b"".join(self.events)
        pieces = self.events if self.writes == "event" else [whole[i:i + 1] for i in range(len(whole))]
        gap = 0.005 if self.writes == "event" else self.byte_gap_s
        try:
            for piece in pieces:
                conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                time.sleep(gap)
            conn.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # Envoy ended the exchange (bench.stream_floor kills the ext_proc server mid-answer)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _body_messages(metrics_port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    found = re.search(r'^truthlens_extproc_messages_total\{phase="response_body"\}\s+([0-9.e+]+)', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _ask(port: int, route: str) -> bytes:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "When was it completed?"}],
            "truthlens_context": [f"{S1} {S2}"]}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"content-type": "application/json"}
        if route != "default":
            headers["x-route"] = route
        conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
        resp = conn.getresponse()
        out = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{route}: HTTP {resp.status}: {out[:200]!r}")
        return out
    finally:
        conn.close()


def run(
    rounds: int, byte_gap_s: float, env: dict[str, str] | None = None
) -> dict[tuple[str, str], tuple[float, float, int]]:
    """(route, writes) → (CPU seconds per answer, body messages per answer, answers); ``env``: the
    processor's environment (another build's code), None for this build's."""
    events = chat_stream(f"{S1} {S2} {S1}")
    with tempfile.TemporaryDirectory(prefix="stream-write-sizes-") as tmp:
        work = Path(tmp)
        ports = launch.EnvoyPorts(listener=launch.free_port(), upstream=launch.free_port(),
                                  processor=launch.free_port(), admin=launch.free_port())
        config_path = work / "config.yaml"
        config_path.write_text(launch.config_yaml(None, f"http://127.0.0.1:{ports.upstream}/v1", decisions=DECISIONS),
                               encoding="utf-8")
        target = f"127.0.0.1:{ports.processor}"
        metrics_port = launch.free_port()
        upstream = ChunkedUpstream(ports.upstream, events, byte_gap_s)
        processor = launch.start_processor(config_path, target, work / "processor.log",
                                           metrics_listen=f"127.0.0.1:{metrics_port}", env=env)
        envoy = launch.start_envoy(launch.render_envoy_config(ports), work)
        try:
            launch.wait_envoy(ports.admin, envoy)
            launch.wait_processor(target, processor, timeout_s=120)
            for route in ROUTES:  # warm up: the detector's first run, connections
                _ask(ports.listener, route)
            totals: dict[tuple[str, str], list[float]] = {(r, w): [0.0, 0.0, 0] for r in ROUTES for w in WRITES}
            for _ in range(rounds):
                for writes in WRITES:
                    upstream.writes = writes
                    for route in ROUTES:
                        cpu, messages = _cpu_seconds(processor.proc.pid), _body_messages(metrics_port)
                        answer = _ask(ports.listener, route)
                        if b"[DONE]" not in answer:
                            raise RuntimeError(f"{route}/{writes}: the answer did not arrive whole")
                        total = totals[(route, writes)]
                        total[0] += _cpu_seconds(processor.proc.pid) - cpu
                        total[1] += _body_messages(metrics_port) - messages
                        total[2] += 1
            return {key: (t[0] / t[2], t[1] / t[2], int(t[2])) for key, t in totals.items()}
        finally:
            envoy.stop()
            processor.stop()
            upstream.close()


def report(results: dict[tuple[str, str], tuple[float, float, int]], stream_bytes: int, byte_gap_s: float) -> None:
    print(f"one chat stream of {stream_bytes} bytes per answer; byte writes {byte_gap_s * 1000:g} ms apart")
    print(f"{'route':<8} {'CPU event':>10} {'CPU byte':>10} {'ratio':>7} {'msgs event':>11} {'msgs byte':>10}")
    for route in ROUTES:
        ev, by = results[(route, "event")], results[(route, "byte")]
        ratio = by[0] / ev[0] if ev[0] > 0 else float("inf")
        print(f"{route:<8} {ev[0] * 1000:>7.0f} ms {by[0] * 1000:>7.0f} ms {ratio:>6.1f}x "
              f"{ev[1]:>11.0f} {by[1]:>10.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1, help="answers per route and write size")
    parser.add_argument("--byte-gap-ms", type=float, default=1.0, help="pause between one-byte writes")
    parser.add_argument("--beside", metavar="COMMIT", default=None,
                        help="first run the same with the processor of this commit's code")
    args = parser.parse_args()
    size = len(b"".join(chat_stream(f"{S1} {S2} {S1}")))
    if args.beside:
        with other_build.tree_at(args.beside, ["src"]) as (_, env):
            before = run(args.rounds, args.byte_gap_ms / 1000, env)
        print(f"@{args.beside}:")
        report(before, size, args.byte_gap_ms / 1000)
        print("this build:")
    report(run(args.rounds, args.byte_gap_ms / 1000), size, args.byte_gap_ms / 1000)


if __name__ == "__main__":
    main()
