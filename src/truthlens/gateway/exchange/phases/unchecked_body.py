"""The request body of an exchange no route checks: it goes on unchanged but for the context
extension field, which never reaches the upstream (a body in a content coding, which it cannot
be cut out of, is refused: :mod:`truthlens.gateway.exchange.phases.encoded_request`). Nothing else
of it is read.

Used when the request headers already showed that no check will run
(:mod:`truthlens.gateway.exchange.phase_plan`); an exchange over the worker's stream cap
(:mod:`truthlens.gateway.exchange.phases.overloaded`) is handled the same way unless its route fails closed.
"""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange import mutations
from truthlens.gateway.exchange.phases import encoded_request
from truthlens.gateway.exchange.phases.request_body import strip_only, whole_body
from truthlens.gateway.exchange.phases.state import StreamState


def handle(state: StreamState, msg: pb.ProcessingRequest) -> pb.ProcessingResponse:
    body = whole_body(state, msg)
    if body is None:
        return mutations.passthrough("request_body")
    refusal = encoded_request.refusal(state)
    return refusal if refusal is not None else strip_only(body, state.config, state.api)
