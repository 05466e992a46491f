"""An exchange over the worker's stream cap (``gateway.max_streams``): not checked at all, at once.

The request goes on unchanged but for the context extension field (it never reaches the
upstream); the answer is not read and is marked ``unavailable`` (reason ``worker_overloaded``),
with any X-TruthLens-* header the upstream wrote removed.
"""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway import mutations
from truthlens.gateway.phases import unchecked_body
from truthlens.gateway.phases.request_headers import header_dict
from truthlens.gateway.phases.response_headers import reply, spoofed_headers
from truthlens.gateway.phases.state import StreamState
from truthlens.gateway.presentation import unavailable_headers

REASON = "worker_overloaded"


def handle(state: StreamState, msg: pb.ProcessingRequest, kind: str) -> pb.ProcessingResponse:
    if kind == "request_body":
        return unchecked_body.handle(state, msg)
    if kind == "response_headers":
        spoofed = spoofed_headers(header_dict(msg.response_headers.headers))
        return reply(unavailable_headers(state.config.hallucination, REASON), spoofed, "none")
    return mutations.passthrough(kind)  # type: ignore[arg-type]
