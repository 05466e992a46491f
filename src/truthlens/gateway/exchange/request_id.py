"""The exchange's request id back to the client.

Envoy gives every request an ``x-request-id`` (the key of the processor's audit line); a client
never saw it. The processor echoes it on the response it sees (the upstream's answer, checked
or not, and every refusal it writes), so a ticket can quote the id the gateway logged. An
upstream that sent its own, different ``x-request-id`` (OpenAI does) keeps it as
``x-upstream-request-id`` rather than losing it.

The id is echoed byte for byte: one with bytes that are not UTF-8 (Latin-1 ``caf\xe9``) comes
back as sent, never with U+FFFD in their place (see :func:`~truthlens.gateway.exchange.mutations.header_value`).

Exchanges Envoy decides without the processor's response phases (routes that skip the
processor, ``/v1/models``) get no echo from here; ``always_set_request_id_in_response`` on
Envoy's HTTP connection manager covers those.
"""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange.mutations import fill_header_mutation, header_value

REQUEST_ID_HEADER = "x-request-id"
UPSTREAM_REQUEST_ID_HEADER = "x-upstream-request-id"


def echo(reply: pb.ProcessingResponse, msg: pb.ProcessingRequest, request_id: str | None) -> None:
    """Add ``request_id`` to ``reply`` when it shapes what the client receives: the response
    headers' reply or an immediate response. Other replies are left as they are."""
    if not request_id:
        return
    which = reply.WhichOneof("response")
    if which == "immediate_response":
        fill_header_mutation(reply.immediate_response.headers, {REQUEST_ID_HEADER: request_id})
    elif which == "response_headers":
        headers = {REQUEST_ID_HEADER: request_id}
        upstream = _upstream_request_id(msg.response_headers.headers)
        if upstream and upstream != request_id:
            headers[UPSTREAM_REQUEST_ID_HEADER] = upstream
        fill_header_mutation(reply.response_headers.response.header_mutation, headers)


def _upstream_request_id(header_map: pb.HeaderMap) -> str | None:
    for h in header_map.headers:
        if h.key.lower() == REQUEST_ID_HEADER:
            return header_value(h)
    return None
