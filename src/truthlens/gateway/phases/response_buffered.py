"""Response body, BUFFERED JSON: check the completion once and translate its presentation into
a body mutation (headers, warning / rewritten contents, details) or an immediate response."""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway import mutations, openai_body
from truthlens.gateway.phases.check import check, skip
from truthlens.gateway.phases.state import CheckedRequest, Runtime, StreamState
from truthlens.gateway.presentation import Presentation


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    checked = state.checked
    if checked is None:
        return mutations.passthrough("response_body")
    # BUFFERED: this one message holds the whole body.
    body = msg.response_body.body
    state.checked = None  # whatever happens next, this exchange is checked at most once
    if len(body) > checked.route.max_body_bytes:
        return _unchecked(state, rt, checked, "too_large")
    try:
        response = openai_body.parse_chat_response(body)
    except openai_body.BodyError as exc:
        return _unchecked(state, rt, checked, exc.reason, str(exc))
    if not response.contents:
        return _unchecked(state, rt, checked, "no_choices")
    return _translate(await check(state, checked, rt, response.contents), response)


def _translate(shown: Presentation, response: openai_body.ChatResponse) -> pb.ProcessingResponse:
    if shown.refusal is not None:
        # An immediate response, not a body rewrite: only it can change the status code, and
        # in BUFFERED mode nothing of the upstream's response has reached the client yet.
        return mutations.refusal_response(shown.refusal)
    details = shown.details if shown.attach_details else None
    new_body = None
    if shown.contents is not None or shown.warning is not None or details is not None:
        new_body = openai_body.render_chat_response(
            response, contents=shown.contents, warning=shown.warning, details=details, warn_indices=shown.warned
        )
    return mutations.body_reply("response_body", body=new_body, set_headers=shown.headers)


def _unchecked(
    state: StreamState, rt: Runtime, checked: CheckedRequest, reason: str, detail: str | None = None
) -> pb.ProcessingResponse:
    shown = skip(state, rt, checked.route, checked.decision.name, reason, detail)
    if shown.refusal is not None:
        return mutations.refusal_response(shown.refusal)
    return mutations.body_reply("response_body", set_headers=shown.headers)
