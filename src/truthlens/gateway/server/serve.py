"""grpc.aio lifecycle of the processor: bind, health service, message-size limits, worker
processes sharing the port (SO_REUSEPORT), graceful drain on SIGTERM, the event loop each runs on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from truthlens import logs
from truthlens.detector.types import DetectorError
from truthlens.evidence.embedder import EmbedderError
from truthlens.gateway.core.probes import BindError
from truthlens.gateway.core.telemetry import Telemetry, mark_process_dead
from truthlens.gateway.core.trace_export import trace_export_summary
from truthlens.gateway.exchange.lifecycle import Lifecycle
from truthlens.gateway.exchange.phases.state import Runtime
from truthlens.gateway.exchange.services import ServiceProvider
from truthlens.gateway.policy.adaptive.choice import Bandits
from truthlens.gateway.policy.config_store import ConfigStore
from truthlens.gateway.server.dry_run import DryRunCheck
from truthlens.gateway.server.dry_run import Limits as CheckLimits
from truthlens.gateway.server.feedback import FeedbackHandler
from truthlens.gateway.server.processor import SERVICE_NAME, ExternalProcessor
from truthlens.gateway.server.worker_check import WorkerCheck
from truthlens.options import ConfigError

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# A bad config file, a missing model, a port in use: reported in one line, exit status 1.
STARTUP_ERRORS = (ConfigError, DetectorError, EmbedderError, OSError, RuntimeError, ValueError)
STARTUP_FAILED = 3  # a worker's exit status that the supervisor does not retry
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    config_path: str
    listen: str = "127.0.0.1:50051"
    # Prometheus /metrics; with several workers the supervisor serves all workers' samples
    # (prometheus_client multi-process mode). None: off.
    metrics_listen: str | None = "127.0.0.1:9190"
    workers: int = 1
    # Envoy sends a BUFFERED body as one gRPC message: gRPC's 4 MiB default would refuse it.
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    grace_s: float = 10.0  # in-flight streams get this long to finish on SIGTERM
    tls_cert: str | None = None
    tls_key: str | None = None
    config_poll_s: float = 2.0
    # POST /v1/check on the metrics listener (a dry run of the detector); off: 404 there.
    check_endpoint: bool = True
    check_limits: CheckLimits = field(default_factory=CheckLimits)  # what one dry run may ask


class ProcessorServer:
    """One serving process: start, report health, drain."""

    def __init__(
        self,
        settings: ServerSettings,
        *,
        worker_index: int = 0,
        serve_metrics: bool = True,
        telemetry: Telemetry | None = None,  # tests pass one with their own registry and exporter
        check_port: Any = None,  # under a supervisor: where to report this worker's /v1/check port
    ) -> None:
        self.settings = settings
        self.telemetry = telemetry or Telemetry()
        self.worker_index = worker_index
        self.serve_metrics = serve_metrics
        self.check_port = check_port
        self.health = health.aio.HealthServicer()
        self._server: grpc.aio.Server | None = None
        self._services: ServiceProvider | None = None
        self._watch: asyncio.Task[None] | None = None
        self._sampler: asyncio.Task[None] | None = None
        self.port: int | None = None
        self.lifecycle = Lifecycle()
        self.ready = False  # /readyz: the detector is loaded with a valid config and gRPC serves
        self.bandits = Bandits()  # adaptive routes' stores: the exchanges' and POST /v1/feedback's

    async def start(self) -> None:
        s = self.settings
        telemetry = self.telemetry
        store = ConfigStore(s.config_path, telemetry=telemetry)
        # POST /v1/check: the serving detector with the current config's route settings.
        check = DryRunCheck(asyncio.get_running_loop(), lambda: store.current,
                            lambda: self._services.detector if self._services is not None and self.ready else None,
                            s.check_limits)
        if s.metrics_listen and s.check_endpoint and not self.serve_metrics and self.check_port is not None:
            # A supervisor's worker: its own loopback listener, which the supervisor's /v1/check
            # forwards to (truthlens.gateway.server.worker_check).
            private = telemetry.start_metrics_server("127.0.0.1:0", ready=lambda: self.ready, check=check)
            self.check_port.value = private.port
        if s.metrics_listen and self.serve_metrics:
            feedback = FeedbackHandler(lambda: store.current, self.bandits, telemetry)
            probes = telemetry.start_metrics_server(s.metrics_listen, ready=lambda: self.ready,
                                                    check=check if s.check_endpoint else None, feedback=feedback)
            log.info("metrics and probes on %s (/metrics, /healthz, /readyz%s, POST /v1/feedback); %s",
                     _http_address(probes.host, probes.port), ", POST /v1/check" if s.check_endpoint else "",
                     trace_export_summary())
        options = [
            ("grpc.max_receive_message_length", s.max_message_bytes),
            ("grpc.max_send_message_length", s.max_message_bytes),
            # gRPC enables SO_REUSEPORT by default; with one worker a second server on the same
            # port must fail loudly instead of silently sharing the traffic.
            ("grpc.so_reuseport", 1 if s.workers > 1 else 0),
        ]
        server = grpc.aio.server(options=options)
        processor = ExternalProcessor()
        server.add_generic_rpc_handlers((processor.handler(),))
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        for name in ("", SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        try:
            if s.tls_cert and s.tls_key:
                creds = grpc.ssl_server_credentials([(Path(s.tls_key).read_bytes(), Path(s.tls_cert).read_bytes())])
                self.port = server.add_secure_port(s.listen, creds)
            else:
                self.port = server.add_insecure_port(s.listen)
        except RuntimeError:  # gRPC's own text points at GRPC_VERBOSITY, not at the cause
            raise BindError(f"the gRPC server cannot listen on {s.listen} (--listen): "
                            "the address is in use or not available here") from None
        await server.start()
        self._server = server
        # Health answers NOT_SERVING while the detector loads; Process calls get UNAVAILABLE.
        self._services = await ServiceProvider.start(store.current, telemetry)
        processor.ready(Runtime(config=store, services=self._services, telemetry=telemetry, lifecycle=self.lifecycle,
                                bandits=self.bandits))
        self._watch = asyncio.create_task(store.watch(s.config_poll_s))
        self._sampler = asyncio.create_task(_sample_queue_depth(self._services, telemetry))
        for name in ("", SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self.ready = True
        log.info("worker %d serving on %s (config %s)", self.worker_index, s.listen, store.current.digest)

    async def stop(self) -> None:
        """Stop accepting, let in-flight streams finish within the grace period, release.

        Drain means release: checks still running near the end of the grace period give way,
        and their answers go out unchanged, marked unavailable (reason ``draining``); an answer
        Envoy is still buffering when the grace runs out is released by Envoy itself, unchanged.
        """
        self.ready = False
        self.lifecycle.begin_drain(self.settings.grace_s)
        await self.health.enter_graceful_shutdown()
        for task in (self._watch, self._sampler):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._server is not None:
            await self._server.stop(self.settings.grace_s)
        if self._services is not None:
            await self._services.close()
        self.bandits.close()


def _http_address(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def _sample_queue_depth(services: ServiceProvider, telemetry: Telemetry, interval_s: float = 0.5) -> None:
    """Keeps ``truthlens_detector_backend_ready`` and ``truthlens_detector_queue_depth`` (when
    the backend counts it) current: the detector knows no telemetry."""
    while True:
        telemetry.set_backend_ready(services.backend_ready())
        depth = services.queue_depth()
        if depth is not None:
            telemetry.set_queue_depth(depth)
        await asyncio.sleep(interval_s)


async def serve(
    settings: ServerSettings,
    *,
    worker_index: int = 0,
    serve_metrics: bool = True,
    on_ready: Callable[[], None] | None = None,
    check_port: Any = None,
) -> None:
    """Serve until SIGTERM / SIGINT, then drain; ``on_ready`` is called once serving."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = ProcessorServer(settings, worker_index=worker_index, serve_metrics=serve_metrics, check_port=check_port)
    try:
        await server.start()
        if on_ready is not None:
            on_ready()
        await stop.wait()
        log.info("worker %d draining (grace %.1fs)", worker_index, settings.grace_s)
    finally:
        await server.stop()


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` on uvloop's event loop where uvloop is installed (a dependency where it
    builds: Linux, macOS), else on asyncio's. Every ext_proc message wakes the loop several times
    (gRPC's completion queue hands each event over through a socket the loop reads): uvloop's
    loop costs less per wake-up (bench/extproc_profile.py, docs/benchmarks.md)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def _worker_main(settings: ServerSettings, index: int, ready: Any = None, check_port: Any = None) -> None:
    logs.configure("INFO", prefix=f"w{index} ")  # the format the CLI chose (TRUTHLENS_LOG_FORMAT)
    try:
        run_loop(serve(settings, worker_index=index, serve_metrics=False,
                       on_ready=ready.set if ready is not None else None, check_port=check_port))
    except STARTUP_ERRORS as exc:
        log.error("worker %d cannot start: %s", index, exc)
        sys.exit(STARTUP_FAILED)


def run(settings: ServerSettings) -> int:
    """Serve in this process (one worker) or supervise ``settings.workers`` worker processes.

    Several workers need ``PROMETHEUS_MULTIPROC_DIR`` set before ``prometheus_client`` is
    imported (the CLI does it) for the supervisor's /metrics to add up every worker.
    """
    if settings.workers <= 1:
        try:
            run_loop(serve(settings))
        except STARTUP_ERRORS as exc:
            log.error("cannot start: %s", exc)
            return 1
        return 0
    return _supervise(settings)


def _supervise(settings: ServerSettings) -> int:
    # spawn, not fork: gRPC's threads and the ONNX runtime must not be forked.
    ctx = multiprocessing.get_context("spawn")
    stopping = False
    metrics = None
    # /readyz of the supervisor: every worker has reported serving (a restarted one: again).
    ready_flags: list[Any] = []
    # Each worker's /v1/check port (0 while it starts): the supervisor's /v1/check forwards there.
    check_ports = [ctx.Value("i", 0) for _ in range(settings.workers)]
    if settings.metrics_listen:
        # The workers serve no probe listener: feedback comes here, into the stores they share.
        config = ConfigStore(settings.config_path)
        telemetry = Telemetry()

        def current() -> Any:
            config.reload()  # a read and a hash; an invalid edit keeps the old config
            return config.current

        metrics = telemetry.start_metrics_server(
            settings.metrics_listen,
            ready=lambda: not stopping and all(f.is_set() for f in ready_flags) and len(ready_flags) > 0,
            check=WorkerCheck(check_ports) if settings.check_endpoint else None,
            feedback=FeedbackHandler(current, Bandits(), telemetry),
        )
        log.info("metrics and probes of all %d workers on %s (/metrics, /healthz, /readyz%s, POST /v1/feedback); %s",
                 settings.workers, _http_address(metrics.host, metrics.port),
                 ", POST /v1/check" if settings.check_endpoint else "", trace_export_summary())
        # Building Telemetry wrote this process's own live gauges (0: it runs no detector); left in
        # place, truthlens_detector_backend_ready would count the supervisor as a process not ready.
        mark_process_dead(os.getpid())

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for p in procs:
            if p.is_alive() and p.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGTERM)

    def start(i: int) -> multiprocessing.process.BaseProcess:
        flag = ctx.Event()
        if i < len(ready_flags):
            ready_flags[i] = flag
        else:
            ready_flags.append(flag)
        check_ports[i].value = 0
        p = ctx.Process(target=_worker_main, args=(replace(settings), i, flag, check_ports[i]),
                        name=f"truthlens-worker-{i}")
        p.start()
        return p

    procs = [start(i) for i in range(settings.workers)]
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    restarts: list[float] = []
    while True:
        for i, p in enumerate(procs):
            p.join(timeout=0.2)
            if p.is_alive() or stopping:
                continue
            if p.exitcode == STARTUP_FAILED:
                log.error("%s cannot start; stopping", p.name)
                on_signal(signal.SIGTERM, None)
                break
            # A worker died on its own: restart it, unless workers keep crashing.
            now = time.monotonic()
            restarts = [t for t in restarts if now - t < 60] + [now]
            if len(restarts) > 5 * settings.workers:
                log.error("workers keep exiting (last: %s, code %s); stopping", p.name, p.exitcode)
                on_signal(signal.SIGTERM, None)
                break
            log.warning("%s exited with %s; restarting", p.name, p.exitcode)
            if p.pid is not None:
                mark_process_dead(p.pid)
            procs[i] = start(i)
        if stopping:
            for p in procs:
                p.join(timeout=settings.grace_s + 5)
                if p.is_alive():
                    p.kill()
                    p.join()
                if p.pid is not None:
                    mark_process_dead(p.pid)
            if metrics is not None:
                metrics.close()
            return 0 if all(p.exitcode == 0 for p in procs) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: python -m truthlens serve")
