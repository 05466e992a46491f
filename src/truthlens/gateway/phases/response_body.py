"""Response body (BUFFERED JSON): check the completion and apply the verdict per the route's
actions (headers, warning / rewritten contents, block)."""

from __future__ import annotations

from truthlens.gateway import errors, mutations, openai_body
from truthlens.gateway.phases import response_stream
from truthlens.gateway.phases.check import check
from truthlens.gateway.phases.failures import cannot_check, reject
from truthlens.gateway.phases.outcome import (
    BLOCK_MESSAGE,
    BLOCK_STATUS,
    Presentation,
    unavailable_headers,
)
from truthlens.gateway.phases.state import CheckedRequest, Runtime, StreamState
from truthlens.gateway.checking import verdict_reason
from truthlens._proto import truthlens_ext_proc_pb2 as pb


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    if state.streamed is not None:
        return await response_stream.handle(state, msg, rt)
    checked = state.checked
    if checked is None:
        return mutations.passthrough("response_body")
    # BUFFERED: this one message holds the whole body.
    body = msg.response_body.body
    state.checked = None  # whatever happens next, this exchange is checked at most once
    policy = checked.policy
    if len(body) > policy.max_body_bytes:
        return _unchecked(state, rt, checked, "too_large")
    try:
        response = openai_body.parse_chat_response(body)
    except openai_body.BodyError as exc:
        return _unchecked(state, rt, checked, exc.reason, str(exc))
    if not response.contents:
        return _unchecked(state, rt, checked, "no_choices")

    verdict, shown = await check(checked, rt, response.contents, state.span)
    if verdict.status == "unavailable" and policy.fail_policy == "closed":
        return reject(errors.failure_outcome(verdict_reason(verdict) or "mode_error", "closed"))
    if shown.block:
        return block_response(shown)
    new_body = None
    if shown.contents is not None or shown.warning is not None or shown.details is not None:
        new_body = openai_body.render_chat_response(
            response,
            contents=shown.contents,
            warning=shown.warning,
            details=shown.details,
        )
    return mutations.body_reply("response_body", body=new_body, set_headers=shown.headers)


def block_response(shown: Presentation) -> pb.ProcessingResponse:
    """An immediate response, not a body rewrite: only it can change the status code, and in
    BUFFERED mode nothing of the upstream's response has reached the client yet."""
    body = openai_body.error_json(BLOCK_STATUS, BLOCK_MESSAGE, "hallucination_detected", "hallucination_detected")
    return mutations.immediate_response(
        BLOCK_STATUS, body, set_headers=shown.headers, details="truthlens_blocked"
    )


def _unchecked(
    state: StreamState, rt: Runtime, checked: CheckedRequest, reason: str, detail: str | None = None
) -> pb.ProcessingResponse:
    refusal = cannot_check(state, rt, checked.policy, reason, detail)
    if refusal is not None:
        return refusal
    headers = unavailable_headers(checked.policy, errors.normalize_reason(reason))
    return mutations.body_reply("response_body", set_headers=headers)
