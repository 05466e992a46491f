"""``OTEL_TRACES_EXPORTER=console`` with ``--log-format json``: each span is one JSON line, like the
log records, so a log pipeline reading the process's output never gets half an object.

Real: the OpenTelemetry SDK's console exporter and tracer provider."""

from __future__ import annotations

import json

import pytest

from truthlens.gateway.core import telemetry, trace_export


def _spans_written(capsys: pytest.CaptureFixture[str]) -> list[str]:
    provider = telemetry.build_tracer_provider()
    with provider.get_tracer("test").start_as_current_span("truthlens.check") as span:
        span.set_attribute("truthlens.decision", "chat")
    provider.shutdown()  # flushes the batch processor
    return [line for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_json_logs_get_one_line_per_span(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("TRUTHLENS_LOG_FORMAT", "json")
    lines = _spans_written(capsys)
    assert len(lines) == 1
    assert json.loads(lines[0])["name"] == "truthlens.check"


def test_text_logs_keep_the_sdk_s_readable_form(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("TRUTHLENS_LOG_FORMAT", "text")
    assert len(_spans_written(capsys)) > 1  # indented JSON over several lines


@pytest.mark.parametrize(("env", "says"), [
    ({}, "traces: not exported"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, "traces: exported over OTLP to http://collector:4317"),
    ({"OTEL_TRACES_EXPORTER": "console"}, "traces: exported to console"),
    ({"OTEL_TRACES_EXPORTER": "none"}, "traces: not exported (OTEL_TRACES_EXPORTER=none)"),
    ({"OTEL_SDK_DISABLED": "true"}, "traces: off"),
])
def test_the_start_up_line_says_where_traces_go(env: dict[str, str], says: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert trace_export.trace_export_summary().startswith(says)
