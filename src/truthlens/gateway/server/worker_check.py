"""``POST /v1/check`` under a ``--workers`` supervisor: the supervisor runs no detector, so it
forwards each dry run to a worker's own check listener (loopback, a port the worker picks and
reports through a shared value), taking the workers in turn and skipping one that is not up.
The shipped deployments run two workers; without this their ``/v1/check`` answered 501."""

from __future__ import annotations

import http.client
import itertools
import json
import threading
from collections.abc import Sequence
from typing import Any

from truthlens.gateway.core.probes import CHECK_PATH, CheckResult

TIMEOUT_S = 180.0  # a batch of dry runs on a busy detector; the worker bounds each check itself


class WorkerCheck:
    """The supervisor's ``check`` handler; ``ports`` holds each worker's check port (0: not up)."""

    def __init__(self, ports: Sequence[Any]) -> None:
        self._ports = ports  # multiprocessing Values ("i"), one per worker
        self._turn = itertools.count()
        self._lock = threading.Lock()

    def __call__(self, body: bytes) -> CheckResult:
        with self._lock:
            start = next(self._turn)
        n = len(self._ports)
        for i in range(n):
            port = int(self._ports[(start + i) % n].value)
            if port <= 0:
                continue
            try:
                return _post(port, body)
            except (OSError, http.client.HTTPException, ValueError):
                continue  # this worker is restarting: the next one answers
        return 503, {"error": "no worker answers /v1/check yet (the detector is loading, or the workers restart)",
                     "reason": "not_ready"}


def _post(port: int, body: bytes) -> CheckResult:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        conn.request("POST", CHECK_PATH, body=body, headers={"content-type": "application/json"})
        resp = conn.getresponse()
        doc = json.loads(resp.read() or b"{}")
        return resp.status, doc if isinstance(doc, dict) else {"result": doc}
    finally:
        conn.close()
