"""``POST /v1/check`` on a started processor's probe listener: the serving detector checks a
(context, question, answer) with a route's settings, no upstream and no Envoy.

Real: ``truthlens serve`` in a subprocess with the shipped detector (ONNX Runtime), its HTTP
listener. The second processor's generative detector points at a closed port (nothing scripted)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens.detector.calibration.probability import task_priors
from truthlens.detector.manifest import DEFAULT_MODEL_DIR
from truthlens.detector.prompt import SUMMARY_INSTRUCTION, read_task
from truthlens.gateway.core.probes import MAX_CHECK_BODY_BYTES
from truthlens.gateway.policy.thresholds import tau
from truthlens.testing import launch

PASSAGE = ("The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the engineering "
           "company of Gustave Eiffel and completed in 1889 as the entrance arch to the World's Fair.")
GROUNDED = {"context": [PASSAGE], "question": "When was the Eiffel Tower completed?",
            "answer": "The Eiffel Tower was completed in 1889."}
WRONG_YEAR = {**GROUNDED, "answer": "The Eiffel Tower was completed in 1925."}


PRICED = {"miss_cost": 3, "prior": 0.2}


def post(port: int, body: bytes, method: str = "POST") -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/check", data=body if method == "POST" else None,
                                     method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return int(resp.status), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read())


def check(port: int, doc: Any) -> tuple[int, Any]:
    return post(port, json.dumps(doc).encode())


def _started(config: Path, tmp_path: Path, name: str) -> Iterator[int]:
    metrics = launch.free_port()
    child = launch.start_processor(config, f"127.0.0.1:{launch.free_port()}", tmp_path / f"{name}.log",
                                   metrics_listen=f"127.0.0.1:{metrics}")
    try:
        launch.wait_until(lambda: launch.http_ok(f"http://127.0.0.1:{metrics}/readyz"), "the processor's /readyz",
                          child, timeout_s=120)
        yield metrics
    finally:
        child.stop()


@pytest.fixture(scope="module")
def processor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    tmp = tmp_path_factory.mktemp("dry-run")
    config = tmp / "config.yaml"
    # The shipped decisions and one whose threshold comes from costs with a traffic prior (τ per task).
    shipped = yaml.safe_load(launch.config_yaml(None, "http://127.0.0.1:9/v1"))
    shipped["decisions"].append({"name": "priced", "rules": {"operator": "AND", "conditions": [
        {"type": "path", "prefix": "/priced"}]}, "plugins": [{"type": "hallucination", "configuration": {
            "threshold": PRICED}}]})
    config.write_text(yaml.safe_dump(shipped, sort_keys=False, allow_unicode=True), encoding="utf-8")
    yield from _started(config, tmp, "processor")


def test_a_grounded_answer_is_clean_and_a_wrong_year_is_flagged_with_why(processor: int) -> None:
    status, clean = check(processor, GROUNDED)
    assert status == 200, clean
    assert clean["detected"] is False and clean["spans"] == [] and clean["reason"] is None
    status, flagged = check(processor, {**WRONG_YEAR, "route": "chat_completions"})
    assert status == 200, flagged
    assert flagged["detected"] is True and flagged["score"] >= flagged["threshold"] and flagged["route"] == "chat_completions"
    span = next(s for s in flagged["spans"] if s["text"] == "1925")
    assert WRONG_YEAR["answer"][span["start"]:span["end"]] == "1925"
    assert flagged["reason"] == span["reason"] and "1925" in flagged["why"]
    shipped = yaml.safe_load(launch.SHIPPED_CONFIG.read_text(encoding="utf-8"))["hallucination"]["threshold"]
    assert clean["threshold"] == flagged["threshold"] == shipped  # the τ in force (configs/config.yaml's)


def test_a_route_priced_by_costs_answers_with_the_tau_of_the_task_read(processor: int) -> None:
    # The expected τ from the shipped manifest's task priors and the rule, never written here.
    priors = task_priors(DEFAULT_MODEL_DIR)
    assert priors is not None
    summary = {**GROUNDED, "question": SUMMARY_INSTRUCTION}
    shapes = [read_task(doc["context"], doc["question"]).shape for doc in (GROUNDED, summary)]
    assert shapes[0] != shapes[1]
    status, answers = check(processor, {"items": [{**GROUNDED, "route": "priced"}, {**summary, "route": "priced"}]})
    assert status == 200, answers
    for answer, shape in zip(answers["results"], shapes, strict=True):
        assert answer["threshold"] == pytest.approx(round(tau(PRICED["miss_cost"], PRICED["prior"], priors[shape]), 4))


def test_a_batch_answers_each_item_in_order(processor: int) -> None:
    status, doc = check(processor, {"items": [WRONG_YEAR, GROUNDED]})
    assert status == 200, doc
    assert [r["detected"] for r in doc["results"]] == [True, False]


@pytest.mark.parametrize(("body", "status", "names"), [
    (b"{not json", 400, "not JSON"),
    (json.dumps({**GROUNDED, "context": "one string"}).encode(), 400, "context: must be a list of strings"),
    (json.dumps({**GROUNDED, "answer": 3}).encode(), 400, "answer: must be a string"),
    (json.dumps({**GROUNDED, "anwser": "x"}).encode(), 400, "anwser: unknown field"),
    (json.dumps({"items": [GROUNDED, {**GROUNDED, "question": None}]}).encode(), 400, "items[1].question"),
    (json.dumps({**GROUNDED, "route": "no-such-route"}).encode(), 404, "route: no decision named 'no-such-route'"),
    (json.dumps({"items": [GROUNDED] * 65}).encode(), 413, "at most 64"),
    (b" " * (MAX_CHECK_BODY_BYTES + 1), 413, "over"),
    # Nested past the JSON depth bound, a number past Python's digit limit, a lone surrogate: the
    # client's input, so 400 with a JSON error (these were a non-JSON 500 and a 503).
    (b'{"items":' + b"[" * 5000 + b"]" * 5000 + b"}", 400, "nested deeper"),
    (b'{"items":[' + b"[" * 200 + b"]" * 200 + b"]}", 400, "nested deeper"),
    (json.dumps(GROUNDED).encode()[:-1] + b', "x": ' + b"9" * 5000 + b"}", 400, "not JSON"),
    (json.dumps({**GROUNDED, "answer": "\ud800 1925"}).encode(), 400, "answer: holds a lone surrogate"),
    (json.dumps({"items": [GROUNDED, {**GROUNDED, "context": ["ok", "\udfff"]}]}).encode(), 400,
     "items[1].context[1]: holds a lone surrogate"),
    # Characters over the per-request bound (default 2,000,000), well under the 4 MiB body limit.
    (json.dumps({"items": [{**GROUNDED, "context": ["x" * 700_000]}] * 3}).encode(), 413, "--check-max-chars"),
])
def test_bad_input_is_refused_naming_the_field(processor: int, body: bytes, status: int, names: str) -> None:
    got, doc = post(processor, body)
    assert got == status and names in doc["error"], doc


def test_the_processor_still_serves_after_bad_input(processor: int) -> None:
    for body in (b"[" * 5000, b'{"answer": ' + b"7" * 9000 + b"}", json.dumps({**GROUNDED, "answer": "\ud83d"}).encode()):
        assert post(processor, body)[0] == 400
    assert check(processor, GROUNDED)[0] == 200


@pytest.mark.parametrize("answer", ["", "   \n\t "])
def test_an_answer_with_no_text_is_skipped_as_the_gateway_says(processor: int, answer: str) -> None:
    status, doc = check(processor, {**WRONG_YEAR, "answer": answer})
    assert status == 200, doc
    assert doc["detected"] == "skipped" and doc["reason"] == "no_text" and doc["score"] is None, doc


@pytest.mark.parametrize("context", [[], [""], [" ", "\n"]])
def test_no_context_is_skipped_as_the_gateway_says(processor: int, context: list[str]) -> None:
    # The gateway's default no_context policy (skip): not checked, never "detected".
    status, doc = check(processor, {**WRONG_YEAR, "context": context})
    assert status == 200, doc
    assert doc["detected"] == "skipped" and doc["reason"] == "no_context" and doc["spans"] == [], doc
    status, batch = check(processor, {"items": [{**WRONG_YEAR, "context": context}, WRONG_YEAR]})
    assert status == 200 and [r["detected"] for r in batch["results"]] == ["skipped", True], batch


def test_no_check_endpoint_answers_501_saying_why() -> None:
    from io import BytesIO

    from prometheus_client import CollectorRegistry

    from truthlens.gateway.core.probes import probe_app

    seen: list[str] = []
    body = b"".join(probe_app(CollectorRegistry(), None, None)(
        {"PATH_INFO": "/v1/check", "REQUEST_METHOD": "POST", "CONTENT_LENGTH": "2", "wsgi.input": BytesIO(b"{}")},
        lambda status, headers: seen.append(status)))
    assert seen == ["501 Not Implemented"] and "--no-check-endpoint" in json.loads(body)["error"]


def test_get_is_not_a_check(processor: int) -> None:
    assert post(processor, b"", method="GET")[0] == 405


def test_the_start_up_log_names_the_listener_and_where_traces_go(processor: int,
                                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    log = (tmp_path_factory.getbasetemp() / "dry-run0" / "processor.log").read_text(encoding="utf-8")
    assert f"metrics and probes on http://127.0.0.1:{processor} (/metrics, /healthz, /readyz, POST /v1/check, POST /v1/feedback)" in log
    assert "traces: not exported (set OTEL_EXPORTER_OTLP_ENDPOINT" in log


def test_a_detector_that_cannot_answer_is_a_503_with_the_reason(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "configs" / "examples" / "llm-detector.yaml"
    doc = yaml.safe_load(example.read_text(encoding="utf-8"))
    doc["models"]["span-detector"].update(base_url=f"http://127.0.0.1:{launch.free_port()}/v1", max_retries=0)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(doc), encoding="utf-8")
    for port in _started(config, tmp_path, "llm-processor"):
        status, body = check(port, GROUNDED)
        assert status == 503, body
        assert body["reason"] == "detector_unavailable" and "llm_unavailable" in body["error"]
