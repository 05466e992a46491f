"""The gRPC floor of a streamed route, and why the processor keeps Envoy's STREAMED body mode.

Envoy sends a streamed answer's body to the ext_proc server one upstream read at a time. This
measures what that costs a Python grpc.aio server that does nothing else, in the two body modes
a server can pick per exchange (``mode_override`` on the response headers' reply):

  streamed  STREAMED: one reply per chunk, each chunk unchanged (what the processor uses)
  duplex    FULL_DUPLEX_STREAMED (trailers sent): the server replies only with whole SSE events
            (``streamed_response``), so it may coalesce a byte-at-a-time upstream's chunks

Per mode: the server's CPU per answer (``/proc``) with the stream of ``bench.stream_write_sizes``
written one event per write and one byte per write; then the same answer with the server killed
at its tenth body message: what the client receives (Envoy's ``failure_mode_allow`` lets the
rest through only for the chunks it still holds). Real Envoy (the shipped ``envoy.yaml``), real
gRPC; scripted: the upstream (a raw socket) and the do-nothing server.

Run: ``python -m bench.stream_floor``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bench.stream_write_sizes import S1, S2, ChunkedUpstream, _cpu_seconds, chat_stream
from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.testing import launch

MODES = ("streamed", "duplex")
DIE_AT = 10  # the body message at which the server is killed in the last run


async def _process(requests: AsyncIterator[pb.ProcessingRequest], mode: str, die_at: int) -> AsyncIterator[Any]:
    """One exchange: nothing but what the mode needs (request body not asked for)."""
    held = bytearray()
    seen = 0
    async for msg in requests:
        kind = msg.WhichOneof("request")
        reply = pb.ProcessingResponse()
        if kind == "request_headers":
            reply.request_headers.response.SetInParent()
            reply.mode_override.response_header_mode = pb.ProcessingMode.SEND
        elif kind == "response_headers":
            reply.response_headers.response.SetInParent()
            if mode == "duplex":
                reply.mode_override.response_body_mode = pb.ProcessingMode.FULL_DUPLEX_STREAMED
                reply.mode_override.response_trailer_mode = pb.ProcessingMode.SEND
            else:
                reply.mode_override.response_body_mode = pb.ProcessingMode.STREAMED
        elif kind == "response_body":
            seen += 1
            if seen == die_at:
                os._exit(1)  # the server goes away mid-answer
            body = msg.response_body
            if mode == "streamed":
                reply.response_body.response.SetInParent()
            else:
                held += body.body
                cut = len(held) if body.end_of_stream else held.rfind(b"\n\n") + 2
                if cut < 2 and not body.end_of_stream:
                    continue  # no whole event yet: no reply at all
                out = reply.response_body.response.body_mutation.streamed_response
                out.body, out.end_of_stream = bytes(held[:cut]), body.end_of_stream
                del held[:cut]
        elif kind == "response_trailers":
            if held:  # the rest, before the trailers' reply
                rest = pb.ProcessingResponse()
                out = rest.response_body.response.body_mutation.streamed_response
                out.body, out.end_of_stream = bytes(held), True
                held.clear()
                yield rest
            reply.response_trailers.SetInParent()
        else:
            getattr(reply, kind).response.SetInParent()
        yield reply


def serve(port: int, mode: str, die_at: int) -> None:
    import grpc

    async def process(requests: AsyncIterator[pb.ProcessingRequest], _context: Any) -> AsyncIterator[Any]:
        # An async generator function: grpc.aio tells a streaming handler by its kind.
        async for reply in _process(requests, mode, die_at):
            yield reply

    async def main() -> None:
        server = grpc.aio.server()
        handler = grpc.stream_stream_rpc_method_handler(
            process,
            request_deserializer=pb.ProcessingRequest.FromString,
            response_serializer=pb.ProcessingResponse.SerializeToString)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "envoy.service.ext_proc.v3.ExternalProcessor", {"Process": handler}),))
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        print("ready", flush=True)
        await server.wait_for_termination()

    asyncio.run(main())


def _ask(port: int) -> tuple[bytes, str]:
    """The body the client got, and how it ended."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "stream": True, "messages": []}),
                     {"content-type": "application/json"})
        resp = conn.getresponse()
        try:
            return resp.read(), f"HTTP {resp.status}"
        except http.client.IncompleteRead as exc:
            return exc.partial, f"HTTP {resp.status}, then cut"
    finally:
        conn.close()


def run(mode: str) -> dict[str, Any]:
    events = chat_stream(f"{S1} {S2} {S1}")
    whole = b"".join(events)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="stream-floor-") as tmp:
        for die_at in (0, DIE_AT):
            ports = launch.EnvoyPorts(listener=launch.free_port(), upstream=launch.free_port(),
                                      processor=launch.free_port(), admin=launch.free_port())
            upstream = ChunkedUpstream(ports.upstream, events, 0.001)
            server = subprocess.Popen([sys.executable, "-m", "bench.stream_floor", "--serve", str(ports.processor),
                                       mode, str(die_at)], stdout=subprocess.PIPE)
            assert server.stdout is not None
            server.stdout.readline()
            work = Path(tmp) / f"{mode}-{die_at}"
            work.mkdir()
            envoy = None
            try:
                envoy = launch.start_envoy(launch.render_envoy_config(ports), work)
                launch.wait_envoy(ports.admin, envoy)
                if die_at:
                    body, end = _ask(ports.listener)
                    out["killed"] = f"{len(body)} of {len(whole)} bytes ({end})"
                    continue
                _ask(ports.listener)  # warm up
                for writes in ("event", "byte"):
                    upstream.writes = writes
                    cpu = _cpu_seconds(server.pid)
                    body, _end = _ask(ports.listener)
                    out[writes] = (_cpu_seconds(server.pid) - cpu, body == whole)
            finally:
                if envoy is not None:
                    envoy.stop()
                server.kill()
                server.wait()
                upstream.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", nargs=3, metavar=("PORT", "MODE", "DIE_AT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], int(args.serve[2]))
        return
    size = len(b"".join(chat_stream(f"{S1} {S2} {S1}")))
    print(f"one chat stream of {size} bytes per answer; byte writes 1 ms apart; a do-nothing ext_proc server")
    print(f"{'mode':<9} {'CPU event':>10} {'CPU byte':>9}  whole  server killed at body message {DIE_AT}")
    for mode in MODES:
        r = run(mode)
        whole = "yes" if r["event"][1] and r["byte"][1] else "NO"
        print(f"{mode:<9} {r['event'][0] * 1000:>7.0f} ms {r['byte'][0] * 1000:>6.0f} ms  {whole:>5}  {r['killed']}")


if __name__ == "__main__":
    main()
