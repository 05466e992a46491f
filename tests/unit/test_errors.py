"""Reason labels and fail-open / fail-closed outcomes. Pure; nothing is scripted."""

from __future__ import annotations

import pytest

from truthlens.detector.types import DetectorError, InvalidInput, Overloaded
from truthlens.gateway.core.errors import (
    CLIENT_REASONS,
    REASONS,
    GatewayError,
    failure_outcome,
    normalize_reason,
    reason_for_exception,
)


def test_every_reason_has_a_status_and_a_meaning() -> None:
    for reason, (status, meaning) in REASONS.items():
        assert reason.isidentifier() and 400 <= status < 600 and meaning
    assert {"malformed_json", "too_large", "content_encoding"} <= CLIENT_REASONS
    assert "detector_timeout" not in CLIENT_REASONS


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("too_large", "too_large"),
        ("timeout", "detector_timeout"),
        ("overloaded", "detector_overloaded"),
        ("budget", "budget_exhausted"),
        ("detector_onnx_crash", "detector_error"),
        ("internal_error", "detector_error"),
        ("model_error", "detector_error"),
        ("llm_http_5xx", "mode_error"),
        (None, "internal"),
    ],
)
def test_normalize_keeps_labels_bounded(label: str | None, expected: str) -> None:
    assert normalize_reason(label) == expected


def test_reason_for_exception() -> None:
    assert reason_for_exception(Overloaded("full")) == "detector_overloaded"
    assert reason_for_exception(InvalidInput("too long")) == "invalid_input"
    assert reason_for_exception(DetectorError("onnx", "boom")) == "detector_error"
    assert reason_for_exception(TimeoutError()) == "budget_exhausted"
    assert reason_for_exception(GatewayError("sse_framing", "bad")) == "sse_framing"
    assert reason_for_exception(KeyError("x")) == "internal"


def test_fail_open_continues_and_fail_closed_rejects_with_the_reason_status() -> None:
    opened = failure_outcome("detector_timeout", "open")
    assert (opened.action, opened.reason) == ("continue", "detector_timeout")
    closed = failure_outcome("detector_timeout", "closed")
    assert (closed.action, closed.status) == ("reject", 503)
    assert failure_outcome("too_large", "closed").status == 413
    bad = failure_outcome("malformed_json", "closed", "request body is not valid JSON: line 1")
    assert bad.status == 400 and "line 1" in bad.message
    # An upstream error passes through whatever the policy: nothing was checked or hidden.
    assert failure_outcome("upstream_status", "closed").action == "continue"
