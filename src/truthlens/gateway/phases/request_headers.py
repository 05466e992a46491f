"""Request headers: remember path, method and headers, and the API the path speaks; never
changes the request."""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway import endpoints, mutations
from truthlens.gateway.phases.state import RequestInfo, StreamState

# request_attributes arrive under the filter's name on the first message.
_ATTRIBUTES_KEY = "envoy.filters.http.ext_proc"


def header_dict(header_map: pb.HeaderMap) -> dict[str, str]:
    """Envoy sends lower-case names and puts values in ``raw_value``; repeated names are joined
    with ``,`` as HTTP allows."""
    out: dict[str, str] = {}
    for h in header_map.headers:
        value = h.raw_value.decode("utf-8", "replace") if h.raw_value else h.value
        name = h.key.lower()
        out[name] = f"{out[name]},{value}" if name in out else value
    return out


def handle(state: StreamState, msg: pb.ProcessingRequest) -> pb.ProcessingResponse:
    headers = header_dict(msg.request_headers.headers)
    path = headers.get(":path", "")
    method = headers.get(":method", "")
    attrs = msg.attributes.get(_ATTRIBUTES_KEY) if _ATTRIBUTES_KEY in msg.attributes else None
    if attrs is not None:
        fields = attrs.fields
        if "request.path" in fields:
            path = fields["request.path"].string_value or path
        if "request.method" in fields:
            method = fields["request.method"].string_value or method
    state.info = RequestInfo(path=path, method=method, headers=headers)
    state.api = endpoints.for_path(path)
    return mutations.passthrough("request_headers")
