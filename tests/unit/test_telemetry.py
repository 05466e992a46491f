"""Telemetry: metric names and labels of the contract, spans parented by a W3C traceparent
(in-memory span exporter), no exporter without OTEL_* variables, the /metrics endpoint over
real HTTP, and multi-process aggregation across real worker processes. Nothing is scripted."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from truthlens.gateway.core import trace_export
from truthlens.gateway.core.telemetry import Telemetry, build_tracer_provider, parse_listen

REPO = Path(__file__).resolve().parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def make() -> tuple[Telemetry, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry(registry=CollectorRegistry(), tracer_provider=provider), exporter


def test_metrics_have_the_contract_names_and_labels() -> None:
    t, _ = make()
    t.record_detection("medical", "standard", "detected", 0.83)
    t.record_detection("medical", "standard", "unavailable", None)
    t.record_latency("standard", "detect", 0.012)
    t.record_iterations("medical", "standard", 2)
    t.record_model_call("gpt-4o", "refine")
    t.record_error("timeout")  # a detector label lands in the gateway's reason set
    t.record_error("something_new")
    t.record_config_reload("applied")
    t.record_escalation("lightweight", "acr")
    t.set_queue_depth(3)
    t.stream_opened()
    assert t.registry.get_sample_value("truthlens_streams_active") == 1
    t.stream_closed()
    t.record_message("request_headers")
    t.record_message("request_headers")
    t.record_message("response_body")
    get = t.registry.get_sample_value
    assert get("truthlens_streams_active") == 0
    assert get("truthlens_extproc_messages_total", {"phase": "request_headers"}) == 2
    assert get("truthlens_extproc_messages_total", {"phase": "response_body"}) == 1
    assert get("truthlens_extproc_messages_total", {"phase": "request_trailers"}) == 0  # every phase is a series
    assert get("truthlens_detections_total", {"decision": "medical", "mode": "standard", "detected": "true"}) == 1
    assert get("truthlens_detections_total", {"decision": "medical", "mode": "standard", "detected": "unavailable"}) == 1
    assert get("truthlens_score_count", {"decision": "medical", "mode": "standard"}) == 1
    assert get("truthlens_score_bucket", {"decision": "medical", "mode": "standard", "le": "0.9"}) == 1
    assert get("truthlens_score_bucket", {"decision": "medical", "mode": "standard", "le": "0.8"}) == 0
    assert get("truthlens_latency_seconds_bucket", {"mode": "standard", "operation": "detect", "le": "0.025"}) == 1
    assert get("truthlens_iterations_sum", {"decision": "medical", "mode": "standard"}) == 2
    assert get("truthlens_models_used_total", {"model": "gpt-4o", "role": "refine"}) == 1
    assert get("truthlens_errors_total", {"reason": "detector_timeout"}) == 1
    assert get("truthlens_errors_total", {"reason": "mode_error"}) == 1
    assert get("truthlens_config_reloads_total", {"result": "applied"}) == 1
    assert get("truthlens_escalations_total", {"from_mode": "lightweight", "to_mode": "acr"}) == 1
    assert get("truthlens_detector_queue_depth") == 3


def test_exchange_span_continues_the_client_trace() -> None:
    t, exporter = make()
    with t.exchange_span(TRACEPARENT, "vendor=1"):
        with t.span("truthlens.detect", chunks=2, reason=None, model=object()):
            pass
    child, root = exporter.get_finished_spans()
    assert format(root.context.trace_id, "032x") == TRACE_ID
    assert root.parent is not None and format(root.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert child.parent is not None and child.parent.span_id == root.context.span_id
    assert child.attributes["truthlens.chunks"] == 2 and "truthlens.reason" not in child.attributes
    assert isinstance(child.attributes["truthlens.model"], str)


def test_exchange_span_without_traceparent_starts_a_trace() -> None:
    t, exporter = make()
    with t.exchange_span(None):
        pass
    with t.exchange_span("garbage"):
        pass
    spans = exporter.get_finished_spans()
    assert len(spans) == 2 and all(s.parent is None for s in spans)


def test_no_exporter_without_otel_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert trace_export.span_exporters() == []
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert [type(e).__name__ for e in trace_export.span_exporters()] == ["ConsoleSpanExporter"]
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert trace_export.span_exporters() == []
    monkeypatch.delenv("OTEL_TRACES_EXPORTER")
    # An endpoint alone switches OTLP on; the exporter is built lazily and sends nothing yet.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:18499")
    (exporter,) = trace_export.span_exporters()
    assert type(exporter).__name__ == "OTLPSpanExporter"
    exporter.shutdown()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "gw-a")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    provider = build_tracer_provider()
    assert provider.resource.attributes["service.name"] == "gw-a"
    provider.shutdown()


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:9090") == ("127.0.0.1", 9090)
    assert parse_listen(":9090") == ("0.0.0.0", 9090)
    assert parse_listen("9090") == ("0.0.0.0", 9090)
    assert parse_listen("[::1]:0") == ("::1", 0)
    with pytest.raises(ValueError):
        parse_listen("host:http")


def test_metrics_endpoint_serves_over_http() -> None:
    t, _ = make()
    t.record_error("too_large")
    server = t.start_metrics_server("127.0.0.1:0")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    finally:
        server.close()
    assert 'truthlens_errors_total{reason="too_large"} 1.0' in text


_WORKER = textwrap.dedent(
    """
    import sys
    from truthlens.gateway.core.telemetry import Telemetry
    t = Telemetry()
    for _ in range(int(sys.argv[1])):
        t.record_detection("d", "lightweight", "clean", 0.1)
    t.set_queue_depth(int(sys.argv[1]))
    """
)
_PARENT = textwrap.dedent(
    """
    import subprocess, sys
    from truthlens.gateway.core.telemetry import Telemetry, mark_process_dead
    procs = [subprocess.Popen([sys.executable, "-c", sys.argv[1], str(n)]) for n in (2, 3)]
    for p in procs:
        assert p.wait() == 0
    t = Telemetry()
    before = t.render_metrics().decode()
    for p in procs:
        mark_process_dead(p.pid)
    after = t.render_metrics().decode()
    print(before)
    print("=====")
    print(after)
    """
)


def test_multiprocess_workers_aggregate_in_the_parent(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", _PARENT, _WORKER], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    before, after = out.stdout.split("=====")
    assert 'truthlens_detections_total{decision="d",detected="false",mode="lightweight"} 5.0' in before
    assert "truthlens_detector_queue_depth 5.0" in before
    # Counters outlive their workers; live gauges go with them.
    assert 'truthlens_detections_total{decision="d",detected="false",mode="lightweight"} 5.0' in after
    assert "truthlens_detector_queue_depth 5.0" not in after
