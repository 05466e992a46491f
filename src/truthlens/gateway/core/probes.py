"""The metrics port's HTTP server: ``/metrics`` (Prometheus, OpenMetrics on request), and the
two probes a platform expects: ``/healthz`` (the process answers: liveness) and ``/readyz``
(200 once the detector is loaded with a valid config and the gRPC server is serving, 503 before
and while draining: readiness). Any other path is 404, so a probe pointed at the wrong path
fails instead of passing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

Ready = Callable[[], bool]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
NOT_READY = "not ready: the detector is loading or the server is draining\n"


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a stuck scrape never blocks shutdown


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Probes hit this every few seconds: no access log."""


def probe_app(registry: CollectorRegistry, ready: Ready | None) -> WSGIApp:
    """The WSGI app: ``ready`` None means always ready (a process with nothing to load)."""
    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            body: Iterable[bytes] = metrics(environ, start_response)
            return body
        if path == "/healthz":
            return _text(start_response, "200 OK", "ok\n")
        if path == "/readyz":
            if ready is None or ready():
                return _text(start_response, "200 OK", "ready\n")
            return _text(start_response, "503 Service Unavailable", NOT_READY)
        return _text(start_response, "404 Not Found", "not found: /metrics, /healthz, /readyz\n")

    return app


def _text(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    body = text.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]


class BindError(OSError):
    """The metrics port could not be opened; the message names the address and the flag."""


def start_probe_server(host: str, port: int, registry: CollectorRegistry, ready: Ready | None) -> WSGIServer:
    """Serve :func:`probe_app` on ``host:port`` (port 0 picks one) in a daemon thread; raises
    :class:`BindError` naming ``host:port`` when the address is taken or cannot be bound."""
    try:
        server = make_server(host, port, probe_app(registry, ready), _ThreadingServer, handler_class=_QuietHandler)
    except OSError as exc:
        # The bare OSError says "Address already in use" without saying which address.
        why = exc.strerror or str(exc)
        raise BindError(f"the metrics server cannot listen on {host}:{port} (--metrics-listen): {why}") from None
    threading.Thread(target=server.serve_forever, name="truthlens-metrics", daemon=True).start()
    return server
