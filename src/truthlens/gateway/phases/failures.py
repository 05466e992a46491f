"""A check that cannot run: count it, then either mark the exchange or refuse it (per route)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthlens.gateway import errors, mutations, openai_body
from truthlens.gateway.phases.state import Runtime, Skipped, StreamState
from truthlens._proto import truthlens_ext_proc_pb2 as pb

if TYPE_CHECKING:
    from truthlens.gateway.config import RouteSettings


def cannot_check(
    state: StreamState, rt: Runtime, policy: RouteSettings, reason: str, detail: str | None = None
) -> pb.ProcessingResponse | None:
    """``None``: go on unchanged (the response will carry ``x-truthlens-detected: unavailable``);
    else the immediate error response a fail-closed route answers with."""
    outcome = errors.failure_outcome(reason, policy.fail_policy, detail)
    rt.telemetry.record_error(outcome.reason)
    state.skipped = Skipped(policy=policy, reason=outcome.reason)
    if outcome.action == "continue":
        return None
    return reject(outcome)


def reject(outcome: errors.Outcome) -> pb.ProcessingResponse:
    kind = "invalid_request_error" if outcome.reason in errors.CLIENT_REASONS else "server_error"
    body = openai_body.error_json(outcome.status, outcome.message, kind, outcome.reason)
    return mutations.immediate_response(
        outcome.status,
        body,
        set_headers={"x-truthlens-detected": "unavailable", "x-truthlens-reason": outcome.reason},
        details=f"truthlens_{outcome.reason}",
    )
