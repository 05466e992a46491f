"""A request body in a content coding (``Content-Encoding: gzip``, ``deflate``, ``br``, ...).

The gateway never reads such a body: its bytes are not the JSON the upstream decodes, so what
the gateway read could differ from what the upstream reads. No check can run on it, and the
context extension field cannot be cut out of it. Where that field applies (the matched route's
context settings; the global ones for a request no check takes or a detection-off route),
forwarding the body would hand the upstream the passages the gateway promises to keep from it,
so the request is refused with 400 ``context_field_unremovable`` before the upstream is asked
(an SDK sends plain JSON; a client that compresses its request can send it uncompressed).
Where no field applies it goes on unchanged, and a route's check is marked unavailable
(``content_encoding``; a fail-closed route refuses it, 415).
"""

from __future__ import annotations

from collections.abc import Mapping

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange import mutations
from truthlens.gateway.exchange.phases.check import skip
from truthlens.gateway.exchange.phases.state import Runtime, StreamState
from truthlens.gateway.policy import decisions
from truthlens.gateway.policy.decisions import RequestFacts

REASON = "content_encoding"


def coding(headers: Mapping[str, str]) -> str | None:
    """The request body's content codings other than ``identity`` (None: a plain body)."""
    value = headers.get("content-encoding")
    if not value:  # the usual request: no header at all
        return None
    codings = [c.strip().lower() for c in value.split(",")]
    applied = [c for c in codings if c and c != "identity"]
    return ", ".join(applied) if applied else None


def handle(state: StreamState, rt: Runtime) -> pb.ProcessingResponse:
    """The reply to an encoded request body on an exchange a route may check (decided on the
    headers; rules on the model or the user's text see empty values, as for any unreadable body)."""
    info = state.info
    assert info is not None  # the state machine only allows a body after its headers
    decision = decisions.match(state.config, RequestFacts(info.path, info.method, info.headers,
                                                           repeated=info.repeated))
    state.matched = decision is not None
    route = decision.route if decision is not None else None
    context = route.context if route is not None else state.config.hallucination.context
    if context.extension_field is not None:
        if decision is not None and route is not None:
            # A checked route's exchange gets its audit line (and metric) too, not only the 400.
            skip(state, rt, route, decision.name, REASON, _message(state))
        return _field_unremovable(state, context.extension_field)
    if decision is None or route is None:
        return mutations.passthrough("request_body")
    shown = skip(state, rt, route, decision.name, REASON, _message(state))
    if shown.refusal is not None:
        return mutations.refusal_response(state.api, shown.refusal)
    return mutations.passthrough("request_body")


def refusal(state: StreamState) -> pb.ProcessingResponse | None:
    """For an exchange no check takes (its body only loses the context field, the global
    settings'): the 400 when its body is encoded and the config names a field; None otherwise."""
    field = state.config.hallucination.context.extension_field
    if field is None or state.info is None or coding(state.info.headers) is None:
        return None
    return _field_unremovable(state, field)


def _field_unremovable(state: StreamState, field: str) -> pb.ProcessingResponse:
    message = (f"{_message(state)}, so its {field!r} field cannot be removed before it goes upstream; "
               "send the body uncompressed")
    return mutations.field_unremovable(state.api, message)


def _message(state: StreamState) -> str:
    assert state.info is not None
    return f"the request body is {coding(state.info.headers)}-encoded"
