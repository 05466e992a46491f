"""The metrics port's HTTP server: ``/metrics`` (Prometheus, OpenMetrics on request), and the
two probes a platform expects: ``/healthz`` (the process answers: liveness) and ``/readyz``
(200 once the detector is loaded with a valid config and the gRPC server is serving, 503 before
and while draining: readiness). Any other path is 404, so a probe pointed at the wrong path
fails instead of passing.

``POST /v1/check`` (when the server hands a ``check`` handler: a serving process, or a
``--workers`` supervisor, which forwards it to a worker) reads a JSON body of at most
:data:`MAX_CHECK_BODY_BYTES` and answers what the handler returns (:mod:`truthlens.gateway.server.dry_run`).
``POST /v1/feedback`` (when the server hands a ``feedback`` handler) answers an adaptive route's
request id with good or bad; the handler decides who may call it
(:mod:`truthlens.gateway.server.feedback`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

Ready = Callable[[], bool]
CheckResult = tuple[int, dict[str, Any]]  # HTTP status, JSON body
Check = Callable[[bytes], CheckResult]
# The feedback handler: the body, the peer's address, the Authorization header (or None).
Feedback = Callable[[bytes, str, str | None], CheckResult]
CHECK_PATH = "/v1/check"
FEEDBACK_PATH = "/v1/feedback"
MAX_FEEDBACK_BODY_BYTES = 4096
MAX_CHECK_BODY_BYTES = 4 * 1024 * 1024
_STATUS_TEXT = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
                409: "Conflict", 411: "Length Required", 413: "Content Too Large", 429: "Too Many Requests",
                501: "Not Implemented",
                503: "Service Unavailable"}
StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
NOT_READY = "not ready: the detector is loading or the server is draining\n"


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a stuck scrape never blocks shutdown


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Probes hit this every few seconds: no access log."""


def probe_app(registry: CollectorRegistry, ready: Ready | None, check: Check | None = None,
              feedback: Feedback | None = None) -> WSGIApp:
    """The WSGI app: ``ready`` None means always ready (a process with nothing to load);
    ``check`` None: ``POST /v1/check`` answers 501 (no detector here, or ``serve --no-check-endpoint``)."""
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
        if path == CHECK_PATH:
            return _json(start_response, *_dry_run(environ, check))
        if path == FEEDBACK_PATH:
            return _json(start_response, *_feedback(environ, feedback))
        return _text(start_response, "404 Not Found",
                     f"not found: /metrics, /healthz, /readyz, POST {CHECK_PATH}, POST {FEEDBACK_PATH}\n")

    return app


def _dry_run(environ: dict[str, Any], check: Check | None) -> CheckResult:
    if environ.get("REQUEST_METHOD") != "POST":
        return 405, {"error": f"{CHECK_PATH} takes POST with a JSON body"}
    if check is None:
        return 501, {"error": f"{CHECK_PATH} is off here: serve was started with --no-check-endpoint; "
                              "truthlens detect checks offline"}
    length = environ.get("CONTENT_LENGTH") or ""
    if not length.isdigit():
        return 411, {"error": "send the body with a Content-Length"}
    if int(length) > MAX_CHECK_BODY_BYTES:
        # Read what a client sends anyway (a few times the limit), so it gets the 413 instead of a
        # broken pipe; a larger body is not read: the connection closes.
        left = int(length)
        while 0 < left <= 4 * MAX_CHECK_BODY_BYTES:
            read = len(environ["wsgi.input"].read(min(left, 1 << 16)))
            left = left - read if read else 0
        return 413, {"error": f"the body is over {MAX_CHECK_BODY_BYTES} bytes"}
    return check(environ["wsgi.input"].read(int(length)))


def _feedback(environ: dict[str, Any], feedback: Feedback | None) -> CheckResult:
    if environ.get("REQUEST_METHOD") != "POST":
        return 405, {"error": f"{FEEDBACK_PATH} takes POST with a JSON body"}
    if feedback is None:
        return 501, {"error": f"{FEEDBACK_PATH} is off here (this listener was started without a feedback handler)"}
    length = environ.get("CONTENT_LENGTH") or ""
    if not length.isdigit():
        return 411, {"error": "send the body with a Content-Length"}
    if int(length) > MAX_FEEDBACK_BODY_BYTES:
        return 413, {"error": f"the body is over {MAX_FEEDBACK_BODY_BYTES} bytes"}
    body = environ["wsgi.input"].read(int(length))
    return feedback(body, str(environ.get("REMOTE_ADDR", "")), environ.get("HTTP_AUTHORIZATION"))


def _json(start_response: StartResponse, status: int, doc: dict[str, Any]) -> list[bytes]:
    body = (json.dumps(doc, ensure_ascii=False) + "\n").encode()
    start_response(f"{status} {_STATUS_TEXT.get(status, '')}".strip(),
                   [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _text(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    body = text.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]


class BindError(OSError):
    """The metrics port could not be opened; the message names the address and the flag."""


def start_probe_server(host: str, port: int, registry: CollectorRegistry, ready: Ready | None,
                       check: Check | None = None, feedback: Feedback | None = None) -> WSGIServer:
    """Serve :func:`probe_app` on ``host:port`` (port 0 picks one) in a daemon thread; raises
    :class:`BindError` naming ``host:port`` when the address is taken or cannot be bound."""
    try:
        server = make_server(host, port, probe_app(registry, ready, check, feedback), _ThreadingServer,
                             handler_class=_QuietHandler)
    except OSError as exc:
        # The bare OSError says "Address already in use" without saying which address.
        why = exc.strerror or str(exc)
        raise BindError(f"the metrics server cannot listen on {host}:{port} (--metrics-listen): {why}") from None
    threading.Thread(target=server.serve_forever, name="truthlens-metrics", daemon=True).start()
    return server
