"""An event stream whose ``content-length`` is larger than its body, then a close (FR1): the bytes
the upstream sent reach the client as without the processor where nothing is checked, and a
checked route never ends such an answer as if it were whole.

What Envoy does alone (``/health``, a route that skips the processor): the headers and every byte
flow on as they come, then the connection is closed without the missing bytes (the client's HTTP
reader fails: the body is short). With the processor in the path Envoy holds what it has sent the
processor until it answers, and an upstream reset drops what it holds: a close that comes before
the response-headers reply is Envoy's own 502 (``x-truthlens-reason: upstream_reset``); one that
comes while a body chunk is at the processor cuts the stream there (the client's reader fails).

- Detection off, Envoy-alone behaviour: the routes ``truthlens envoy-routes`` prints send the
  exchange past the processor, so the answer arrives exactly as on ``/health``.
- Detection off through the processor: the same. The processor's reply to the request headers
  moves the exchange to the unmarked route and asks for nothing of the response, so Envoy holds
  neither the headers nor the body for it; before, the response headers went to the processor (to
  remove the route's unchecked mark), and a close that reached Envoy while they were there (body
  and close in the upstream's first write) was Envoy's 502, or a 200 with no byte.
- Checked routes: a 502 named ``upstream_reset``, or a short body without a verdict that calls
  the answer checked, which the processor records once as ``upstream_reset``. Every checked
  exchange has one audit line: one whose call ends before any answer reached the processor too.

Real: Envoy (the shipped ``envoy.yaml``), gRPC ext_proc, the processor with the shipped detector.
Scripted: the upstream is a raw socket (the scripted server cannot lie about its length), which can
also close without a byte of answer or stall until told to go on.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import yaml
from harness import Stack, chat_body
from round3 import CHAT, CONTEXT, DECISIONS, HALLUCINATED, chat_stream, verdicts

from truthlens.testing import launch
from truthlens.testing.raw_upstream import RawUpstream

pytestmark = pytest.mark.envoy

BODY = chat_stream(HALLUCINATED)
MISSING = 50  # bytes the content-length promises beyond the body
CUT = BODY.index(b"\n\n", len(BODY) * 6 // 10) + 30  # inside an event, about 60% through


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes  # de-chunked when chunked
    complete: bool  # the body ended as its framing says a whole body ends


class ShortUpstream(RawUpstream):
    """A socket on the upstream's port: every request gets ``head`` then ``write(conn)``, then a
    close, with a content-length ``MISSING`` bytes larger than the body."""

    def __init__(self, port: int) -> None:
        self.write: Callable[[socket.socket], None] = lambda conn: conn.sendall(BODY)
        self.head = True  # False: the connection closes before the response's headers
        self.stall = threading.Event()  # set: wait for it to be cleared before answering
        super().__init__(port, self._short)

    def _short(self, conn: socket.socket, _body: bytes) -> None:
        while self.stall.is_set():
            time.sleep(0.05)
        if not self.head:
            return
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"content-length: " + str(len(BODY) + MISSING).encode() + b"\r\n\r\n")
            self.write(conn)
        except (BrokenPipeError, ConnectionResetError):
            pass  # Envoy closed it: the exchange was over (the client left while this one stalled)


def _whole_then_close(conn: socket.socket) -> None:
    conn.sendall(BODY)


def _events_then_cut(conn: socket.socket) -> None:
    """The stream event by event up to ``CUT`` (inside an event), then a pause before the close:
    what is measured is what the gateway releases, not a race with the close."""
    sent = 0
    while sent < CUT:
        end = min(BODY.index(b"\n\n", sent) + 2, CUT)
        conn.sendall(BODY[sent:end])
        sent = end
        time.sleep(0.01)
    time.sleep(0.5)


def ask(port: int, path: str, route: str | None, request_id: str = "") -> Answer:
    """One request on a fresh connection, read until the server closes it."""
    data = json.dumps(chat_body("When was it completed?", context=CONTEXT, stream=True)).encode()
    head = (f"POST {path} HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\n" + (f"x-test-route: {route}\r\n" if route else "")
            + (f"x-request-id: {request_id}\r\n" if request_id else "") + "\r\n")
    raw = b""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode() + data)
        while chunk := sock.recv(65536):
            raw += chunk
    top, _, rest = raw.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    status = int(lines[0].split()[1])
    if headers.get("transfer-encoding") == "chunked":
        body, complete = _dechunk(rest)
    else:
        body = rest
        complete = len(rest) == int(headers.get("content-length", "-1"))
    return Answer(status, headers, body, complete)


def _dechunk(data: bytes) -> tuple[bytes, bool]:
    out = b""
    while True:
        size_line, sep, data = data.partition(b"\r\n")
        if not sep:
            return out, False
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return out, True
        if len(data) < size + 2:
            return out + data[:size], False
        out += data[:size]
        data = data[size + 2:]


@pytest.fixture(scope="module")
def short(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, ShortUpstream, int]]:
    """The shared stack on the round-3 routes, its upstream replaced by :class:`ShortUpstream`,
    and a second Envoy on the routes ``truthlens envoy-routes`` prints for them (its port)."""
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    printed = subprocess.run(
        [sys.executable, "-m", "truthlens", "envoy-routes", str(stack.config_path), "--forward-context-field"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    routes = yaml.safe_load(printed)["routes"]
    assert any(r["name"].startswith("bypass:off") for r in routes)
    stack.stop_upstream()
    upstream = ShortUpstream(stack.ports.upstream)
    try:
        with stack.second_envoy(routes, tmp_path_factory.mktemp("short-envoy")) as port:
            yield stack, upstream, port
    finally:
        upstream.close()
        stack.start_upstream()
        stack.write_config(stack.config_yaml())


@pytest.mark.parametrize("write", [_whole_then_close, _events_then_cut], ids=["whole", "cut"])
def test_without_the_processor_every_byte_sent_arrives_and_the_body_ends_short(
    short: tuple[Stack, ShortUpstream, int], write: Callable[[socket.socket], None]
) -> None:
    stack, upstream, bypass_port = short
    upstream.write = write
    sent = BODY if write is _whole_then_close else BODY[:CUT]
    health = ask(stack.ports.listener, "/health", None)  # the shipped envoy.yaml: never the processor
    off = ask(bypass_port, CHAT, "off")  # a detection-off decision on the routes envoy-routes prints
    for got in (health, off):
        assert got.status == 200 and got.body == sent and not got.complete


def test_detection_off_through_the_processor_delivers_what_envoy_alone_does(
    short: tuple[Stack, ShortUpstream, int],
) -> None:
    # FR1: nothing of the response goes to the processor: every byte the upstream sent, the
    # event it left open included, in Envoy's own framing, then the short end. Before: the open
    # event withheld, the body re-chunked.
    stack, upstream, _ = short
    upstream.write = _events_then_cut
    got = ask(stack.ports.listener, CHAT, "off")
    assert got.status == 200 and got.body == BODY[:CUT] and not got.complete
    assert got.headers.get("content-length") == str(len(BODY) + MISSING)  # Envoy's framing, as alone


def test_detection_off_through_the_processor_delivers_a_body_sent_with_its_close(
    short: tuple[Stack, ShortUpstream, int],
) -> None:
    # FR1: the whole body and the close in one write, as Envoy alone delivers it: every byte, the
    # upstream's content-length, then the short end; and no unchecked mark (the exchange moved to
    # the unmarked route). Before: Envoy's 502 `upstream_reset` or a 200 with no byte.
    stack, upstream, _ = short
    upstream.write = _whole_then_close
    for _ in range(3):  # it was a race with the response headers' reply: never once
        got = ask(stack.ports.listener, CHAT, "off")
        assert got.status == 200 and got.body == BODY and not got.complete
        assert got.headers.get("content-length") == str(len(BODY) + MISSING)
        assert not any(name.startswith("x-truthlens-") for name in got.headers)


@pytest.mark.parametrize("route", [None, "block", "closed", "hold", "closed-hold"])
@pytest.mark.parametrize("write", [_whole_then_close, _events_then_cut], ids=["whole", "cut"])
def test_a_checked_route_ends_a_short_answer_with_a_visible_error(
    short: tuple[Stack, ShortUpstream, int], route: str | None, write: Callable[[socket.socket], None]
) -> None:
    stack, upstream, _ = short
    upstream.write = write
    request_id = f"fr1-{uuid.uuid4()}"
    got = ask(stack.ports.listener, CHAT, route, request_id)
    if got.status == 502:
        assert got.headers["x-truthlens-reason"] == "upstream_reset"
    else:
        # The stream was cut where Envoy dropped the rest: the client's reader fails on the short
        # body, and nothing in it says the answer was checked.
        assert got.status == 200 and not got.complete
        assert not any(v.get("status") in ("clean", "detected") for v in verdicts(got.body) if isinstance(v, dict))
    # Whether the answer began (200) or Envoy answered its own 502 (the reset came while the
    # response headers were at the processor, or before they reached it), the processor records
    # the exchange once, as upstream_reset, when its call ends (which may follow the client's
    # close: waited for).
    _one_reset_line(stack, request_id)


def _one_reset_line(stack: Stack, request_id: str, reason: str = "upstream_reset") -> None:
    def audited() -> list[str]:
        return [line for line in stack.processor_log().splitlines()
                if f"request_id={request_id} " in line and "truthlens.audit" in line]

    launch.wait_until(lambda: bool(audited()), "the exchange's audit line", None, 30)
    time.sleep(0.2)  # a second line would follow at once
    (line,) = audited()
    assert "verdict=unavailable" in line and f"reason={reason}" in line, line


@pytest.mark.parametrize("route", [None, "closed", "hold"])
def test_an_upstream_that_closes_before_its_headers_leaves_one_audit_line(
    short: tuple[Stack, ShortUpstream, int], route: str | None
) -> None:
    # The upstream reads the request and closes without a byte of answer: Envoy answers its own
    # 503, which passes the processor as the response (its status is not the upstream's answer
    # to check): one line, upstream_status.
    stack, upstream, _ = short
    upstream.head = False
    try:
        request_id = f"reset-{uuid.uuid4()}"
        got = ask(stack.ports.listener, CHAT, route, request_id)
    finally:
        upstream.head = True
    assert got.status == 503 and b"reset before headers" in got.body
    assert got.headers["x-truthlens-detected"] == "unavailable"
    _one_reset_line(stack, request_id, "upstream_status")


def test_a_checked_exchange_that_ends_before_any_answer_leaves_one_audit_line(
    short: tuple[Stack, ShortUpstream, int],
) -> None:
    # The processor sees the request, then the exchange ends with no response at all (here the
    # client gives up while the upstream has not answered; Envoy does not tell the processor which
    # side went away). Before: no audit line. Scripted: the upstream stalls until the client left.
    stack, upstream, _ = short
    request_id = f"gone-{uuid.uuid4()}"
    data = json.dumps(chat_body("When was it completed?", context=CONTEXT, stream=True)).encode()
    head = (f"POST {CHAT} HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\nx-request-id: {request_id}\r\n\r\n")
    bodies = stack.metric("truthlens_extproc_messages_total", phase="request_body")
    upstream.stall.set()
    try:
        with socket.create_connection(("127.0.0.1", stack.ports.listener), timeout=60) as sock:
            sock.sendall(head.encode() + data)
            # The request has reached the processor (and gone on upstream) before the client leaves.
            launch.wait_until(lambda: stack.metric("truthlens_extproc_messages_total", phase="request_body") > bodies,
                              "the request body at the processor", None, 30)
    finally:
        upstream.stall.clear()
    _one_reset_line(stack, request_id)
