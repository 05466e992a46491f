"""The gateway with its detector on a real Triton server: Envoy → processor (``backend:
remote``, ``configs/examples/remote.yaml``) → Triton over the Open Inference Protocol.

Grounded, hallucinated and streaming answers through Envoy must get the verdicts the
in-process detector gives the same inputs (whatever the shipped model says), and a Triton
killed mid-traffic must fail open with "unavailable" and its reason, then recover when it
returns. Skipped, with the reason, where Triton cannot run (``src/truthlens/testing/model_server.py``);
failed instead in CI (``tests/environments.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import environments
import pytest
import yaml
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED, SCRIPT
from harness import Stack, chat_body, parse_sse
from shipped_inputs import QUESTION, require_shipped_model

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import DetectionInput
from truthlens.gateway.policy.config import parse_config
from truthlens.testing import model_server

_REASON = model_server.unavailable_reason()
pytestmark = pytest.mark.envoy

EXAMPLE = Path(__file__).parents[2] / "configs" / "examples" / "remote.yaml"


class RemoteStack(Stack):
    """The stack with the example remote config, re-pointed at this test's Triton."""

    triton_url = ""

    def config_yaml(self, **_: Any) -> str:
        doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
        doc["detector"]["remote"]["url"] = self.triton_url
        # A loaded two-core CI machine answers the first long batches slowly.
        doc["detector"]["remote"]["timeout_ms"] = 15_000
        doc["detector"]["remote"]["health_interval_s"] = 0.2
        doc["hallucination"]["budgets"]["detection_ms"] = 20_000
        return str(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


@pytest.fixture(scope="module")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[model_server.TritonServer]:
    environments.require(_REASON, "Triton")
    require_shipped_model()
    from truthlens.detector.manifest import DEFAULT_MODEL_DIR

    with model_server.running(DEFAULT_MODEL_DIR, tmp_path_factory.mktemp("triton")) as server:
        yield server


@pytest.fixture(scope="module")
def remote_stack(triton: model_server.TritonServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = RemoteStack(tmp_path_factory.mktemp("remote-stack"), None)
    stack.triton_url = triton.grpc_url
    try:
        stack.start()
        stack.set_script(SCRIPT)
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def in_process() -> dict[str, str]:
    """What the in-process detector says about each scripted answer, under the same settings."""
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    settings = dataclasses.replace(parse_config(doc).detector, backend="onnx", remote=None, max_in_flight=1)

    async def judge() -> dict[str, str]:
        detector = create_detector(settings)
        try:
            out = {}
            for answer in (GROUNDED, HALLUCINATED):
                result = await detector.detect(DetectionInput(CONTEXT, QUESTION, answer), threshold=0.5)
                out[answer] = result.status
            return out
        finally:
            await detector.close()

    return asyncio.run(judge())


HEADER = {"clean": "false", "detected": "true"}


def ask(stack: Stack, word: str, *, stream: bool = False) -> Any:
    return stack.raw("POST", "/v1/chat/completions", chat_body(f"{word}: {QUESTION}", context=CONTEXT, stream=stream))


def test_verdicts_through_envoy_match_the_in_process_detector(remote_stack: Stack, in_process: dict[str, str]) -> None:
    for word, answer in (("grounded", GROUNDED), ("hallucinated", HALLUCINATED)):
        resp = ask(remote_stack, word)
        assert resp.status == 200
        assert resp.headers["x-truthlens-detected"] == HEADER[in_process[answer]], (word, resp.headers)
        assert answer in resp.json()["choices"][0]["message"]["content"]

        events = parse_sse(ask(remote_stack, word, stream=True).body)
        verdicts = [e["truthlens"] for e in events if isinstance(e, dict) and "truthlens" in e]
        assert verdicts and verdicts[-1]["status"] == in_process[answer], (word, verdicts)
    assert remote_stack.metric("truthlens_detector_backend_ready") == 1.0


def test_triton_killed_mid_traffic_fails_open_then_recovers(
    remote_stack: Stack, triton: model_server.TritonServer, in_process: dict[str, str]
) -> None:
    """Runs last in this module: it kills and restarts the module's Triton."""
    assert ask(remote_stack, "hallucinated").headers["x-truthlens-detected"] == HEADER[in_process[HALLUCINATED]]
    triton.kill()
    resp = ask(remote_stack, "hallucinated")
    assert resp.status == 200  # fail open: the answer is delivered unchecked
    assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED  # no warning: nothing was judged
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] in ("detector_unavailable", "detector_timeout")
    deadline = time.monotonic() + 10
    while remote_stack.metric("truthlens_detector_backend_ready") != 0.0:
        assert time.monotonic() < deadline, "the readiness gauge never dropped"
        time.sleep(0.2)
    assert remote_stack.metric("truthlens_errors_total", reason=resp.headers["x-truthlens-reason"]) >= 1

    triton.start()  # same ports: the processor reconnects by itself
    deadline = time.monotonic() + 60
    while True:
        resp = ask(remote_stack, "hallucinated")
        if resp.headers["x-truthlens-detected"] != "unavailable":
            break
        assert time.monotonic() < deadline, "checks never resumed after Triton came back"
        time.sleep(0.3)
    assert resp.headers["x-truthlens-detected"] == HEADER[in_process[HALLUCINATED]]
    deadline = time.monotonic() + 5
    while remote_stack.metric("truthlens_detector_backend_ready") != 1.0:  # sampled every 0.5 s
        assert time.monotonic() < deadline, "the readiness gauge never came back"
        time.sleep(0.2)
