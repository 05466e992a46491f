"""The end-to-end stack for tests: a real Envoy (the shipped ``envoy.yaml`` on free ports), the
real processor (``python -m truthlens serve``) with a real ONNX detector, and the scripted
OpenAI-compatible upstream — the only test double.

Reuse it from any test through the session fixtures in ``tests/conftest.py``::

    def test_something(stack):
        stack.set_script([{"match": {"user": "capital"}, "reply": {"content": "Paris."}}])
        stack.write_config(stack.config_yaml(decisions=[...]))   # waits until applied
        raw = stack.client.chat.completions.with_raw_response.create(...)
        status, headers, body = stack.raw("POST", "/v1/chat/completions", b"{...}")
        calls = stack.upstream_calls()
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from truthlens.testing import launch

_RELOADS = re.compile(r'^truthlens_config_reloads_total\{result="(\w+)"\}\s+([0-9.e+]+)', re.MULTILINE)


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    headers: dict[str, str]  # lower-case names (repeated ones joined with ", ")
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Stack:
    """Envoy → processor → scripted upstream, as child processes on free loopback ports."""

    def __init__(self, workdir: Path, model_dir: Path | None, *, workers: int = 1,
                 env: Mapping[str, str] | None = None) -> None:
        self.workdir = workdir
        self.model_dir = model_dir  # None: the shipped model
        self.workers = workers
        self.env = dict(env or {})  # extra environment of the processor (e.g. OTEL_* variables)
        self.ports = launch.EnvoyPorts(
            listener=launch.free_port(),
            upstream=launch.free_port(),
            processor=launch.free_port(),
            admin=launch.free_port(),
        )
        self.metrics_port = launch.free_port()
        self.processor_grace_s: float | None = None  # --grace-s of the next start (None: its default)
        self.config_path = workdir / "config.yaml"
        self._children: dict[str, launch.Child] = {}
        self._client: Any = None

    # -- lifecycle ----------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def running(cls, workdir: Path, model_dir: Path | None, *, workers: int = 1,
                env: Mapping[str, str] | None = None) -> Iterator[Stack]:
        stack = cls(workdir, model_dir, workers=workers, env=env)
        try:
            stack.start()
            yield stack
        finally:
            stack.stop()

    def start(self) -> None:
        self.config_path.write_text(self.config_yaml(), encoding="utf-8")
        self._children["upstream"] = launch.start_upstream(self.ports.upstream, self.workdir / "upstream.log")
        self.start_processor()
        self._children["envoy"] = launch.start_envoy(launch.render_envoy_config(self.ports), self.workdir)
        launch.wait_upstream(self.ports.upstream, self._children["upstream"])
        launch.wait_envoy(self.ports.admin, self._children["envoy"])
        self.wait_processor()

    def start_processor(self) -> None:
        self._children["processor"] = launch.start_processor(
            self.config_path,
            self.processor_target,
            self.workdir / "processor.log",
            metrics_listen=f"127.0.0.1:{self.metrics_port}",
            workers=self.workers,
            config_poll_s=0.2,
            env={**os.environ, **self.env} if self.env else None,
            grace_s=self.processor_grace_s,
        )

    def wait_processor(self) -> None:
        launch.wait_processor(self.processor_target, self._children["processor"], timeout_s=90)

    def stop_processor(self) -> int | None:
        """SIGTERM the processor (it drains); Envoy and the upstream keep running."""
        child = self._children.pop("processor", None)
        return child.stop() if child is not None else None

    def revive_processor(self) -> None:
        """Start the processor again (with its default grace) if a test stopped or killed it."""
        if not self.processor_alive():
            self.processor_grace_s = None
            self.start_processor()
            self.wait_processor()

    def kill_processor(self) -> None:
        """SIGKILL the processor (no drain, as when it crashes); :meth:`start_processor` brings it back."""
        child = self._children.pop("processor", None)
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.proc.pid, signal.SIGKILL)
            child.stop()

    def signal_processor(self, signum: int) -> None:
        """Send ``signum`` to the processor and return at once (the test watches what follows)."""
        self._children["processor"].proc.send_signal(signum)

    def stop_upstream(self) -> None:
        """Kill the upstream (Envoy then answers 503 itself); :meth:`start_upstream` brings it back."""
        child = self._children.pop("upstream", None)
        if child is not None:
            child.stop()

    def start_upstream(self) -> None:
        self._children["upstream"] = launch.start_upstream(self.ports.upstream, self.workdir / "upstream.log")
        launch.wait_upstream(self.ports.upstream, self._children["upstream"])

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
        for name in ("envoy", "processor", "upstream"):
            child = self._children.pop(name, None)
            if child is not None:
                child.stop()

    @property
    def processor_target(self) -> str:
        return f"127.0.0.1:{self.ports.processor}"

    def processor_alive(self) -> bool:
        child = self._children.get("processor")
        return child is not None and child.alive

    def processor_log(self) -> str:
        return (self.workdir / "processor.log").read_text(encoding="utf-8", errors="replace")

    # -- clients ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.listener}/v1"

    @property
    def client(self) -> Any:
        """The official ``openai`` client, pointed at Envoy (no retries: tests see every failure)."""
        if self._client is None:
            from openai import OpenAI

            self._client = OpenAI(base_url=self.base_url, api_key="test-key", max_retries=0, timeout=60)
        return self._client

    def raw(
        self,
        method: str,
        path: str,
        body: bytes | str | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        port: int | None = None,
        timeout_s: float = 60.0,
    ) -> RawResponse:
        """One HTTP/1.1 request through Envoy (or to ``port``), bytes in, bytes out."""
        if isinstance(body, Mapping):
            body = json.dumps(body)
        data = body.encode() if isinstance(body, str) else body
        hdrs = {"content-type": "application/json"} if data is not None else {}
        hdrs.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", port or self.ports.listener, timeout=timeout_s)
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            out: dict[str, str] = {}
            for name, value in resp.getheaders():
                key = name.lower()
                out[key] = f"{out[key]}, {value}" if key in out else value
            return RawResponse(status=resp.status, headers=out, body=resp.read())
        finally:
            conn.close()

    def upstream_raw(self, method: str, path: str, body: Any = None, headers: Mapping[str, str] | None = None) -> RawResponse:
        """The same request straight to the scripted upstream (no Envoy): the reference bytes."""
        return self.raw(method, path, body, headers, port=self.ports.upstream)

    # -- the scripted upstream ----------------------------------------------------------------

    def set_script(self, rules: Sequence[Mapping[str, Any]]) -> None:
        """Replace the upstream's rules (and clear its call log)."""
        resp = self.upstream_raw("POST", "/_script", json.dumps(list(rules)))
        if resp.status != 200:
            raise ValueError(f"the scripted upstream refused the script: {resp.body.decode()}")

    def set_upstream_options(self, **options: Any) -> dict[str, Any]:
        """Change the scripted upstream's server options (``decode_paths``, ``extra_headers``);
        they outlive scripts, so a test that sets them puts them back."""
        resp = self.upstream_raw("POST", "/_options", json.dumps(options))
        if resp.status != 200:
            raise ValueError(f"the scripted upstream refused the options: {resp.body.decode()}")
        return dict(resp.json())

    @contextmanager
    def upstream_options(self, **options: Any) -> Iterator[Stack]:
        """The scripted upstream with ``options`` set for the block, and what they were put back
        after it (options outlive scripts, so one test's would leak into the next)."""
        before = self.upstream_raw("GET", "/_options").json()
        self.set_upstream_options(**options)
        try:
            yield self
        finally:
            self.set_upstream_options(**{key: before[key] for key in options})

    def serving(self, decisions: Sequence[Mapping[str, Any]], script: Sequence[Mapping[str, Any]]) -> Stack:
        """This stack with ``decisions`` applied and ``script`` as the upstream's (a test module's
        fixture: the session's stack is shared, so each module puts back its own)."""
        assert self.write_config(self.config_yaml(decisions=decisions)) in ("applied", "unchanged")
        self.set_script(script)
        return self

    def upstream_calls(self) -> list[dict[str, Any]]:
        return list(self.upstream_raw("GET", "/_calls").json())

    # -- configuration ------------------------------------------------------------------------

    def config_yaml(
        self,
        *,
        hallucination: Mapping[str, Any] | None = None,
        decisions: Sequence[Mapping[str, Any]] | None = None,
        models: Mapping[str, Any] | None = None,
    ) -> str:
        """The shipped config re-targeted at this stack (see :func:`truthlens.testing.launch.config_yaml`)."""
        return launch.config_yaml(
            self.model_dir,
            f"http://127.0.0.1:{self.ports.upstream}/v1",
            hallucination=hallucination,
            decisions=decisions,
            models=models,
        )

    def write_config(self, text: str, *, timeout_s: float = 15.0) -> str:
        """Write the processor's config file and wait for its verdict on it:
        ``"applied"``, ``"rejected"`` (the old config stays) or ``"unchanged"``."""
        if self.config_path.read_text(encoding="utf-8") == text:
            return "unchanged"
        before = self.reload_counts()
        tmp = self.config_path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(self.config_path)  # atomic: the processor never reads half a file
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            now = self.reload_counts()
            for result in ("applied", "rejected"):
                if now.get(result, 0.0) > before.get(result, 0.0):
                    return result
            time.sleep(0.05)
        raise TimeoutError(f"the processor did not reload {self.config_path} within {timeout_s}s")

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the samples of ``name`` whose labels include ``labels`` (0 when absent)."""
        total = 0.0
        for line in self.metrics_text().splitlines():
            if not line.startswith(name):
                continue
            head, _, value = line.rpartition(" ")
            sample, _, label_text = head.partition("{")
            if sample != name:
                continue
            if all(f'{k}="{v}"' in label_text for k, v in labels.items()):
                total += float(value)
        return total

    def extproc_messages(self) -> float:
        """Every ext_proc message the processor has answered so far (all phases)."""
        return self.metric("truthlens_extproc_messages_total")

    @contextmanager
    def second_envoy(self, routes: Sequence[Mapping[str, Any]], workdir: Path) -> Iterator[int]:
        """Another Envoy (the shipped ``envoy.yaml`` with ``routes`` as its virtual host's routes)
        in front of this stack's processor and upstream; yields its listener port."""
        ports = launch.EnvoyPorts(listener=launch.free_port(), upstream=self.ports.upstream,
                                  processor=self.ports.processor, admin=launch.free_port())
        child = launch.start_envoy(launch.with_routes(launch.render_envoy_config(ports), routes), workdir)
        try:
            launch.wait_envoy(ports.admin, child)
            yield ports.listener
        finally:
            child.stop()

    def reload_counts(self) -> dict[str, float]:
        return {m.group(1): float(m.group(2)) for m in _RELOADS.finditer(self.metrics_text())}


def chat_body(
    question: str,
    *,
    context: Sequence[str] = (),
    model: str = "test-model",
    stream: bool = False,
    n: int = 1,
    **extra: Any,
) -> dict[str, Any]:
    """A chat completion request with the grounding passages in the extension field."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": question}]}
    if context:
        body["truthlens_context"] = list(context)
    if stream:
        body["stream"] = True
    if n != 1:
        body["n"] = n
    body.update(extra)
    return body


def post_with_headers(port: int, path: str, body: Mapping[str, Any], headers: Sequence[tuple[str, str]],
                      timeout_s: float = 60.0) -> RawResponse:
    """A JSON POST whose headers may repeat a name (``Stack.raw`` takes a mapping; http.client
    keeps each ``putheader`` line)."""
    data = json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        conn.putrequest("POST", path)
        for name, value in [("content-type", "application/json"), ("content-length", str(len(data))), *headers]:
            conn.putheader(name, value)
        conn.endheaders(data)
        resp = conn.getresponse()
        return RawResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def responses_body(question: str, *, context: Sequence[str] = (), **extra: Any) -> dict[str, Any]:
    """A Responses API request (``input`` a plain string) with the passages in the extension field."""
    body: dict[str, Any] = {"model": "test-model", "input": question, **extra}
    if context:
        body["truthlens_context"] = list(context)
    return body


def parse_sse(body: bytes) -> list[Any]:
    """The ``data:`` payloads of an SSE body, JSON-decoded (``"[DONE]"`` kept as the string)."""
    events = []
    for block in re.split(rb"\r?\n\r?\n", body):
        data = [line[5:].strip() for line in block.splitlines() if line.startswith(b"data:")]
        if not data:
            continue
        payload = b"\n".join(data).decode()
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def decision(
    name: str,
    *,
    route_header: str | None = None,
    priority: int = 100,
    path_prefix: str = "/v1/chat/completions",
    **configuration: Any,
) -> dict[str, Any]:
    """A decision on the chat path; with ``route_header`` it matches only requests carrying
    ``x-test-route: <route_header>``. ``configuration`` is the hallucination plugin's
    (``mode``, ``actions``, ``streaming``, ``fail_policy``, ``budgets``, ``enabled``, ...)."""
    conditions: list[dict[str, Any]] = [{"type": "path", "prefix": path_prefix}]
    if route_header is not None:
        conditions.append({"type": "header", "name": "x-test-route", "value": route_header})
    return {
        "name": name,
        "priority": priority,
        "rules": {"operator": "AND", "conditions": conditions},
        "plugins": [{"type": "hallucination", "configuration": dict(configuration)}],
    }
