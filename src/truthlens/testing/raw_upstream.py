"""A bare socket on an upstream's port, for replies the scripted upstream cannot make: framing
cut short, a body written one byte at a time, requests its JSON parser refuses. Each connection
gets its request read whole (head and a content-length body), then the connection and the body
are handed to ``answer``, which writes whatever bytes it likes; the connection closes after it.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

Answer = Callable[[socket.socket, bytes], None]


class RawUpstream:
    """Serves ``answer`` on ``127.0.0.1:port``, one thread per connection, until :meth:`close`."""

    def __init__(self, port: int, answer: Answer) -> None:
        self.answer = answer
        self._sock = socket.create_server(("127.0.0.1", port))
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each write its own segment
            self.answer(conn, read_request_body(conn))

    def close(self) -> None:
        self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept(): the port is free once joined
        self._sock.close()
        self._thread.join(5)


def read_request_body(conn: socket.socket) -> bytes:
    """The body of the HTTP/1.1 request on ``conn`` (its content-length; none: empty)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return body
