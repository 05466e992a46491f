"""Response body, BUFFERED JSON: check the answer (a chat completion or a Responses API response,
read by the exchange's endpoint) once and translate its presentation into a body mutation
(headers, warning / rewritten contents, details) or an immediate response."""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis import forged
from truthlens.gateway.apis.interface import BodyError, Endpoint, ParsedResponse, Presentation, Rewrite
from truthlens.gateway.exchange import mutations, ungrounded
from truthlens.gateway.exchange.phases.check import check, skip
from truthlens.gateway.exchange.phases.state import CheckedRequest, Runtime, StreamState
from truthlens.gateway.policy.presentation import final_headers


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    checked = state.checked
    if checked is None:
        # Unchecked: only a verdict the upstream wrote goes (the whole body, or nothing).
        if not msg.response_body.end_of_stream:
            return over_buffer(state)
        scrubbed = forged.without_details(msg.response_body.body)
        return mutations.passthrough("response_body") if scrubbed is None else mutations.body_reply(
            "response_body", body=scrubbed)
    # BUFFERED_PARTIAL: this one message holds the whole body, or as much as Envoy buffers.
    chunk = msg.response_body
    body = chunk.body
    state.checked = None  # whatever happens next, this exchange is checked at most once
    if not chunk.end_of_stream:
        # Over Envoy's buffer: the rest flows through unprocessed, so this part goes on
        # unchanged with the provisional headers (no reply: the call ends, see over_buffer).
        # A fail-closed route refuses instead: Envoy still holds the response headers and this
        # part, so an immediate response replaces the whole answer, and nothing unchecked leaves.
        shown = skip(state, rt, checked.route, checked.decision.name, "too_large",
                     "the upstream's body (no content-length) is larger than the gateway buffers", upstream=True)
        if shown.refusal is not None:
            return mutations.refusal_response(state.api, shown.refusal)
        return over_buffer(state)
    if len(body) > checked.route.max_body_bytes:
        return _unchecked(state, rt, checked, "too_large", body=None)
    try:
        response = state.api.parse_response(body)
    except BodyError as exc:
        return _unchecked(state, rt, checked, exc.reason, str(exc), body=body)
    # (a ``truthlens`` field the upstream wrote is dropped by the rendering below)
    if not response.contents:
        return _unchecked(state, rt, checked, "no_choices", body=body)
    if not any(text.strip() for text in response.contents):
        # Nothing a client is shown to check (empty, blank, tool calls only): skipped, not clean.
        return _translate(state.api, ungrounded.skip(state, rt, checked.route, checked.decision.name,
                                          ungrounded.NO_TEXT_REASON), response)
    return _translate(state.api, await check(state, checked, rt, response.contents), response)


def contain(state: StreamState, rt: Runtime, checked: CheckedRequest, reason: str,
            chunk: pb.HttpBody) -> pb.ProcessingResponse:
    """The reply to a body whose handling raised (a bug: unreadable bodies are handled above), as
    the route says: the refusal on a fail-closed route, else the body unchanged but for a verdict
    the upstream wrote, marked unavailable with ``reason``."""
    if not chunk.end_of_stream:
        return over_buffer(state)
    return _unchecked(state, rt, checked, reason, "the gateway failed while reading the answer", body=chunk.body)


def over_buffer(state: StreamState) -> pb.ProcessingResponse:
    """The reply to a body message Envoy sent because its buffer filled (BUFFERED_PARTIAL, no
    end of stream): none. The call ends instead, and Envoy releases what it holds (with the end
    of stream, when the upstream's last, empty chunk already arrived) and lets the rest through
    unprocessed. A reply would lose that end of stream: Envoy injects the part it sent with
    ``end_stream=false`` and never forwards an empty last chunk queued meanwhile, so the client
    would wait for the end forever. The provisional headers stay (they already went out with
    the header reply)."""
    state.end_call = True
    return mutations.passthrough("response_body")  # not sent: the caller ends the call


def _translate(api: Endpoint, shown: Presentation, response: ParsedResponse) -> pb.ProcessingResponse:
    if shown.refusal is not None:
        # An immediate response, not a body rewrite: only it can change the status code, and
        # in BUFFERED mode nothing of the upstream's response has reached the client yet.
        return mutations.refusal_response(api, shown.refusal)
    details = shown.details if shown.attach_details else None
    # The original bytes come back when nothing changes (a ``truthlens`` field the upstream
    # wrote is a change: it is dropped).
    rendered = response.render(Rewrite(shown.contents, shown.warning, details, shown.warned))
    new_body = None if rendered is response.body else rendered
    headers, remove = final_headers(shown.headers)
    return mutations.body_reply("response_body", body=new_body, set_headers=headers, remove=remove)


def _unchecked(
    state: StreamState, rt: Runtime, checked: CheckedRequest, reason: str, detail: str | None = None,
    *, body: bytes | None,
) -> pb.ProcessingResponse:
    """The answer goes on unchanged but for a verdict the upstream wrote in ``body`` (None:
    not read, e.g. too large), marked unavailable; refused on a fail-closed route."""
    shown = skip(state, rt, checked.route, checked.decision.name, reason, detail, upstream=True)
    if shown.refusal is not None:
        return mutations.refusal_response(state.api, shown.refusal)
    headers, remove = final_headers(shown.headers)
    scrubbed = forged.without_details(body) if body is not None else None
    return mutations.body_reply("response_body", body=scrubbed, set_headers=headers, remove=remove)
