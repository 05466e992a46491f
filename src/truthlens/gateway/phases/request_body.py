"""Request body (BUFFERED): parse the chat request, match a decision, remember what to check,
and forward the request with the context extension field stripped."""

from __future__ import annotations

from truthlens.gateway import mutations, openai_body
from truthlens.gateway.decisions import RequestFacts, match
from truthlens.gateway.phases.failures import cannot_check
from truthlens.gateway.phases.state import CheckedRequest, Runtime, StreamState
from truthlens._proto import truthlens_ext_proc_pb2 as pb


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    chunk = msg.request_body
    state.request_body += chunk.body
    if not chunk.end_of_stream:
        # BUFFERED sends one message; anything else is answered chunk by chunk unchanged.
        return mutations.passthrough("request_body")
    info = state.info
    assert info is not None  # the state machine only allows a body after its headers
    body = bytes(state.request_body)
    state.request_body.clear()
    config = state.config
    defaults = config.hallucination

    try:
        request = openai_body.parse_chat_request(body, defaults.context)
    except openai_body.BodyError as exc:
        # Match on what is known without a body, so an unrelated route stays untouched.
        decision = match(config, RequestFacts(info.path, info.method, info.headers, "", ""))
        if decision is None or decision.policy is None:
            return mutations.passthrough("request_body")
        refusal = cannot_check(state, rt, decision.policy, exc.reason, str(exc))
        return refusal or mutations.passthrough("request_body")

    with rt.telemetry.span("truthlens.decision", path=info.path, model=request.model) as span:
        decision = match(
            config, RequestFacts(info.path, info.method, info.headers, request.model, request.question)
        )
        span.set_attribute("truthlens.decision", decision.name if decision is not None else "")
    policy = decision.policy if decision is not None else None
    if decision is not None and policy is not None:
        if policy.context != defaults.context:
            request = openai_body.parse_chat_request(body, policy.context)
        if len(body) > policy.max_body_bytes:
            refusal = cannot_check(state, rt, policy, "too_large")
            if refusal is not None:
                return refusal
        else:
            state.checked = CheckedRequest(
                decision=decision,
                policy=policy,
                request=request,
                include_spans=policy.spans_request_header.lower() in info.headers,
                services=rt.services.for_config(config),
            )
    # The gateway's own extension field never reaches the upstream, checked or not.
    if request.forward_body is not None:
        return mutations.body_reply("request_body", body=request.forward_body)
    return mutations.passthrough("request_body")
