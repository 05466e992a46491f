"""Where a detection-off exchange's time goes in the processor, stage by stage.

The traffic is ``bench.gateway_throughput``'s own: its chat request (the context in the
``truthlens_context`` field) is sent through the shipped ``envoy.yaml`` to a real processor
(this build's ``ExternalProcessor`` on this process's event loop, the decision with
``enabled: false``), and the ext_proc messages Envoy sends are recorded as they came off the wire.
Those bytes are then replayed:

  in process    the exchange's code, timed stage by stage (``time.perf_counter``, each stage a
                loop of its own over the recorded messages): decoding the ProcessingRequests,
                opening the stream (stream cap, config pin, telemetry), the request headers
                phase (the header pass, the API, the decision plan, the prebuilt reply), the
                request body phase (looking for the context field and cutting it out), encoding
                the ProcessingResponses, closing; and the whole exchange as ``Stream`` runs it
  over gRPC     the same processor handler behind a real ``grpc.aio`` server in this process
                (on the processor's event loop: ``serve.run_loop``, uvloop's where installed),
                fed by a client process that replays the recorded bytes (``--concurrency``
                streams at a time): this process's CPU per exchange (gRPC's threads
                included); beside it, ``bench/extproc_floor.py``'s do-nothing handler asking
                for the body (the floor of a two-message exchange) under the same client

The gRPC row is what the server costs per exchange beyond the exchange's own code (HTTP/2,
the C core, the asyncio bridge, the handler's awaits); its share is of the processor's CPU per
exchange over gRPC. On a detection-off route no response message reaches the processor: the
answer goes to the unmarked route, whose ``response_headers_to_remove`` (Envoy) drops any
``x-truthlens-*`` verdict the upstream forged, so the scrub costs the processor nothing there.

``bench.detector_profile --only processor`` times ``Stream.handle`` in process on messages it
builds; this bench replays the messages Envoy sent and adds what gRPC costs around them.

``--cprofile N``: also the in-process exchange's N most expensive functions (cProfile, own time).

Run: ``python -m bench.extproc_profile [--exchanges 20000] [--grpc-exchanges 4000]
[--concurrency 8] [--cprofile 15]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import pstats
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import grpc
import yaml
from prometheus_client import CollectorRegistry

from bench.extproc_floor import handler as floor_handler
from bench.gateway_throughput import BODY, SCRIPT, decisions
from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis import endpoints
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.exchange import mutations, phase_plan
from truthlens.gateway.exchange.phases.request_body import strip_only
from truthlens.gateway.exchange.phases.request_headers import read_headers
from truthlens.gateway.exchange.phases.state import Runtime, StreamState
from truthlens.gateway.exchange.services import ServiceProvider
from truthlens.gateway.exchange.stream import Stream
from truthlens.gateway.policy.config_store import ConfigStore
from truthlens.gateway.policy.decisions import RequestFacts
from truthlens.gateway.server.processor import METHOD_PATH, SERVICE_NAME, ExternalProcessor
from truthlens.testing import launch

T = TypeVar("T")
Handler = Callable[[object, grpc.aio.ServicerContext], Awaitable[None]]


async def start_server(process: Handler, listen: str,
                       record: list[bytes] | None = None) -> grpc.aio.Server:
    """A grpc.aio server with ``process`` as ``Process`` (``record``: every request's bytes are
    appended to it as they came off the wire)."""
    def decode(data: bytes) -> pb.ProcessingRequest:
        if record is not None:
            record.append(data)
        msg: pb.ProcessingRequest = pb.ProcessingRequest.FromString(data)
        return msg

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, {
        "Process": grpc.stream_stream_rpc_method_handler(
            process, request_deserializer=decode, response_serializer=pb.ProcessingResponse.SerializeToString)
    }),))
    server.add_insecure_port(listen)
    await server.start()
    return server


async def runtime(work: Path, upstream_url: str) -> Runtime:
    """The processor's runtime on the bench's detection-off config (the shipped model is loaded,
    as the processor does, though no exchange here uses it)."""
    config = work / "config.yaml"
    config.write_text(launch.config_yaml(None, upstream_url, decisions=decisions(False)), encoding="utf-8")
    telemetry = Telemetry(registry=CollectorRegistry())
    store = ConfigStore(config, telemetry=telemetry)
    services = await ServiceProvider.start(store.current, telemetry)
    return Runtime(config=store, services=services, telemetry=telemetry)


async def capture(rt: Runtime, work: Path, requests: int) -> list[bytes]:
    """The ext_proc messages of the last of ``requests`` bench requests sent through Envoy."""
    ports = launch.free_ports()
    script = work / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT), encoding="utf-8")
    record: list[bytes] = []
    processor = ExternalProcessor(rt)
    server = await start_server(processor.process, f"127.0.0.1:{ports.processor}", record)
    children = []
    try:
        upstream = launch.start_upstream(ports.upstream, work / "upstream.log", script)
        children.append(upstream)
        envoy = launch.start_envoy(launch.render_envoy_config(ports), work)
        children.append(envoy)
        await asyncio.to_thread(launch.wait_upstream, ports.upstream, upstream)
        await asyncio.to_thread(launch.wait_envoy, ports.admin, envoy)
        url = f"http://127.0.0.1:{ports.listener}/v1/chat/completions"
        for _ in range(requests):
            record.clear()
            req = urllib.request.Request(url, data=BODY, headers={"content-type": "application/json"})
            with await asyncio.to_thread(urllib.request.urlopen, req, timeout=30) as resp:
                resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"the bench request answered {resp.status}")
    finally:
        for child in reversed(children):
            child.stop()
        await server.stop(None)
    return list(record)


def run_on(loop: str, main: Coroutine[Any, Any, T]) -> T:
    """``main`` on the processor's event loop (``loop`` "processor") or on asyncio's."""
    if loop == "asyncio":
        return asyncio.run(main)
    from truthlens.gateway.server.serve import run_loop  # here: a build without it runs on asyncio

    return run_loop(main)


def per_call(fn: Callable[[], object], repeats: int) -> float:
    """Seconds per call of ``fn`` (after one warm-up call)."""
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


async def exchange(rt: Runtime, raw: list[bytes]) -> list[bytes]:
    """One exchange as ``ExternalProcessor.process`` runs it, without gRPC: decode, open, handle
    each message, encode each reply, close."""
    out = []
    counted = rt.lifecycle.try_open(rt.config.current.max_streams)
    stream = Stream(rt, overloaded=not counted)
    rt.telemetry.stream_opened()
    try:
        for data in raw:
            reply = await stream.handle(pb.ProcessingRequest.FromString(data))
            if isinstance(reply, pb.ProcessingResponse):
                out.append(reply.SerializeToString())
    finally:
        stream.close()
        rt.telemetry.stream_closed()
        if counted:
            rt.lifecycle.close()
    return out


def stages(rt: Runtime, raw: list[bytes], repeats: int) -> list[tuple[str, float]]:
    """Each stage of a detection-off exchange alone, in seconds per exchange."""
    msgs = [pb.ProcessingRequest.FromString(d) for d in raw]
    head = next(m for m in msgs if m.WhichOneof("request") == "request_headers")
    body = next((m for m in msgs if m.WhichOneof("request") == "request_body"), None)
    config = rt.config.current
    headers, repeated = read_headers(head.request_headers.headers)
    path = head.attributes["envoy.filters.http.ext_proc"].fields["request.path"].string_value or headers[":path"]
    facts = RequestFacts(path, "POST", headers, repeated=repeated)
    needs = phase_plan.plan(config, facts, has_body=not head.request_headers.end_of_stream)
    replies = [mutations.request_headers_reply(request_body=needs.request_body, response=needs.response,
                                               unchecked=needs.unchecked)]
    api = endpoints.for_path(path)
    if body is not None:
        replies.append(strip_only(body.request_body.body, config, api))

    def open_close() -> None:
        rt.lifecycle.try_open(config.max_streams)
        rt.telemetry.stream_opened()
        state = StreamState(config=rt.config.current, lease=rt.services.acquire(config))
        for m in msgs:
            rt.telemetry.record_message(m.WhichOneof("request"))
        state.lease.release()
        rt.telemetry.stream_closed()
        rt.lifecycle.close()

    rows = [
        ("decode the requests (FromString)", per_call(lambda: [pb.ProcessingRequest.FromString(d) for d in raw],
                                                      repeats)),
        ("open/close: cap, config pin, lease, counters", per_call(open_close, repeats)),
        ("headers: one pass over the header map", per_call(lambda: read_headers(head.request_headers.headers),
                                                           repeats)),
        ("headers: the API of the path", per_call(lambda: endpoints.for_path(path), repeats)),
        ("headers: the decision plan (policy)",
         per_call(lambda: phase_plan.plan(config, RequestFacts(path, "POST", headers, repeated=repeated),
                                          has_body=True), repeats)),
        ("headers: the reply (prebuilt copy)",
         per_call(lambda: mutations.request_headers_reply(request_body=needs.request_body, response=needs.response,
                                                          unchecked=needs.unchecked), repeats)),
    ]
    if body is not None:
        rows.append(("body: context field found and cut out",
                     per_call(lambda: strip_only(body.request_body.body, config, api), repeats)))
    rows.append(("encode the replies (SerializeToString)",
                 per_call(lambda: [r.SerializeToString() for r in replies], repeats)))
    return rows


def client_main(target: str, record: Path, exchanges: int, concurrency: int) -> int:
    """The replaying client (a process of its own, so that its CPU is not the server's; on
    asyncio's loop whatever the server's)."""
    raw = [bytes.fromhex(line) for line in record.read_text().split()]

    async def run() -> None:
        async with grpc.aio.insecure_channel(target) as channel:
            call_of = channel.stream_stream(METHOD_PATH)  # bytes in, bytes out
            left = exchanges

            async def one() -> None:
                nonlocal left
                while left > 0:
                    left -= 1
                    call = call_of()
                    for data in raw:
                        await call.write(data)
                        await call.read()
                    await call.done_writing()
                    await call.code()

            await asyncio.gather(*(one() for _ in range(concurrency)))

    asyncio.run(run())
    return 0


def spawn(*argv: str) -> subprocess.Popen[bytes]:
    """``argv`` started by posix_spawn (``close_fds=False`` lets ``subprocess`` use it): no
    fork while gRPC's threads run, which gRPC's fork handlers would log about."""
    return subprocess.Popen(argv, close_fds=False)


async def over_grpc(process: Handler, record: Path, exchanges: int, concurrency: int) -> tuple[float, float]:
    """This process's CPU seconds and wall seconds per exchange with ``process`` serving."""
    listen = f"127.0.0.1:{launch.free_port()}"
    server = await start_server(process, listen)
    argv = [sys.executable, "-m", "bench.extproc_profile", "--client", listen, "--record", str(record),
            "--concurrency", str(concurrency)]
    try:
        await asyncio.to_thread(spawn(*argv, "--grpc-exchanges", str(max(50, exchanges // 10))).wait)
        cpu, wall = time.process_time(), time.perf_counter()
        if await asyncio.to_thread(spawn(*argv, "--grpc-exchanges", str(exchanges)).wait) != 0:
            raise RuntimeError("the replaying client failed")
        return (time.process_time() - cpu) / exchanges, (time.perf_counter() - wall) / exchanges
    finally:
        await server.stop(None)


async def main_async(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="truthlens-extproc-profile-") as tmp:
        work = Path(tmp)
        rt = await runtime(work, f"http://127.0.0.1:{launch.free_port()}/v1")
        raw = await capture(rt, work, requests=5)
        kinds = [pb.ProcessingRequest.FromString(d).WhichOneof("request") for d in raw]
        record = work / "record.txt"
        record.write_text("\n".join(d.hex() for d in raw), encoding="utf-8")

        rows = stages(rt, raw, args.exchanges)
        for _ in range(200):
            await exchange(rt, raw)
        start = time.perf_counter()
        for _ in range(args.exchanges):
            await exchange(rt, raw)
        whole = (time.perf_counter() - start) / args.exchanges
        if args.cprofile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.exchanges // 4):
                await exchange(rt, raw)
            prof.disable()

        processor = ExternalProcessor(rt)
        served_cpu, served_wall = await over_grpc(processor.process, record, args.grpc_exchanges, args.concurrency)
        floor_cpu, floor_wall = await over_grpc(floor_handler(True), record, args.grpc_exchanges, args.concurrency)
        await rt.services.close()

    print(f"detection-off exchange (bench.gateway_throughput's request through Envoy): messages {', '.join(kinds)}; "
          f"{len(raw[0])} + {sum(len(d) for d in raw[1:])} bytes")
    print(f"in process: {args.exchanges} exchanges per stage; over gRPC: {args.grpc_exchanges} exchanges, "
          f"{args.concurrency} streams at a time (CPU of this process, gRPC's threads included)")
    print(f"{'stage':<48}{'µs/exchange':>12}{'share':>8}")
    for name, seconds in rows:
        print(f"{name:<48}{seconds * 1e6:>12.1f}{seconds / served_cpu:>8.0%}")
    print(f"{'the whole exchange in process (Stream)':<48}{whole * 1e6:>12.1f}{whole / served_cpu:>8.0%}")
    grpc_part = served_cpu - whole
    print(f"{'gRPC: server, HTTP/2, asyncio, the handler loop':<48}{grpc_part * 1e6:>12.1f}"
          f"{grpc_part / served_cpu:>8.0%}")
    print(f"{'processor over gRPC, CPU (100%)':<48}{served_cpu * 1e6:>12.1f}{1:>8.0%}")
    print(f"{'do-nothing floor +body over gRPC, CPU':<48}{floor_cpu * 1e6:>12.1f}{floor_cpu / served_cpu:>8.0%}")
    print(f"wall per exchange over gRPC: processor {served_wall * 1e6:.0f} µs, floor {floor_wall * 1e6:.0f} µs "
          "(client and server share the machine's cores)")
    if args.cprofile:
        print(f"\nin-process exchange, the {args.cprofile} functions with the most own time (cProfile):")
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime").print_stats(args.cprofile)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exchanges", type=int, default=20000, help="in-process repeats per stage")
    parser.add_argument("--grpc-exchanges", type=int, default=4000, help="exchanges replayed over gRPC")
    parser.add_argument("--concurrency", type=int, default=8, help="streams the replaying client keeps open")
    parser.add_argument("--cprofile", type=int, default=0, metavar="N",
                        help="also print the in-process exchange's N most expensive functions")
    parser.add_argument("--loop", choices=("processor", "asyncio"), default="processor",
                        help="the event loop: the processor's (serve.run_loop: uvloop's where installed) or "
                             "asyncio's (the processor's before it ran on uvloop; also runs a build without run_loop)")
    parser.add_argument("--client", metavar="TARGET", help=argparse.SUPPRESS)  # the replaying client's process
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        return client_main(args.client, args.record, args.grpc_exchanges, args.concurrency)
    with contextlib.suppress(KeyboardInterrupt):
        return run_on(args.loop, main_async(args))
    return 130


if __name__ == "__main__":
    raise SystemExit(main())
