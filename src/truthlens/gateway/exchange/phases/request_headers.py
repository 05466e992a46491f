"""Request headers: remember path, method and headers, and the API the path speaks; tell Envoy
which later phases the exchange needs (:mod:`truthlens.gateway.exchange.phase_plan`).

The one change to the request: an exchange whose answer the processor may read (a route that
checks, or one only the body decides) asks the upstream for it uncompressed (``Accept-Encoding:
identity``, whatever the client accepts, absent included). The processor does not decode
compressed answers: an upstream that honours the client's ``gzip, deflate`` (the ``openai`` SDK's
default; nginx ``gzip on``, aiohttp, hosted APIs) would otherwise leave every answer unchecked.
The cost and the choice are measured in ``bench/response_encoding.py`` (docs/operations.md).
Exchanges known at their headers to go unchecked (no decision, or detection off) keep the
client's header: their answer streams past the processor."""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis import endpoints
from truthlens.gateway.exchange import mutations, phase_plan
from truthlens.gateway.exchange.phase_plan import PhasePlan
from truthlens.gateway.exchange.phases.state import RequestInfo, StreamState
from truthlens.gateway.policy.decisions import RequestFacts

# request_attributes arrive under the filter's name on the first message.
_ATTRIBUTES_KEY = "envoy.filters.http.ext_proc"
ACCEPT_ENCODING = "accept-encoding"


def header_dict(header_map: pb.HeaderMap) -> dict[str, str]:
    """Envoy sends lower-case names and puts values in ``raw_value``; repeated names are joined
    with ``,`` as HTTP allows."""
    return read_headers(header_map)[0]


def read_headers(header_map: pb.HeaderMap) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """:func:`header_dict`, and each value of every header that came more than once (route rules
    test them one by one, as Envoy's route matchers do), from one pass over the map."""
    out: dict[str, str] = {}
    values: dict[str, list[str]] = {}  # only the names that came more than once
    for header in header_map.headers:
        name, value = header.key.lower(), mutations.header_value(header)
        if name in out:
            if name in values:
                values[name].append(value)
            else:
                values[name] = [out[name], value]
            out[name] = f"{out[name]},{value}"
        else:
            out[name] = value
    return out, {name: tuple(v) for name, v in values.items()}


def handle(state: StreamState, msg: pb.ProcessingRequest) -> tuple[pb.ProcessingResponse, PhasePlan]:
    """The reply, and the phases it asks Envoy for."""
    request = msg.request_headers
    headers, repeated = read_headers(request.headers)
    path = headers.get(":path", "")
    method = headers.get(":method", "")
    attrs = msg.attributes.get(_ATTRIBUTES_KEY) if _ATTRIBUTES_KEY in msg.attributes else None
    if attrs is not None:
        fields = attrs.fields
        if "request.path" in fields:
            path = fields["request.path"].string_value or path
        if "request.method" in fields:
            method = fields["request.method"].string_value or method
    state.info = RequestInfo(path=path, method=method, headers=headers, repeated=repeated)
    state.api = endpoints.for_path(path)
    facts = RequestFacts(path, method, headers, repeated=repeated)
    needs = phase_plan.plan(state.config, facts, has_body=not request.end_of_stream)
    if needs.matched is not None:
        # Known now; the request body phase (when there is one) decides it again on the body.
        state.matched = needs.matched
    identity = {ACCEPT_ENCODING: "identity"} if needs.response and not needs.unchecked else None
    reply = mutations.request_headers_reply(request_body=needs.request_body, response=needs.response,
                                            set_headers=identity, unchecked=needs.unchecked)
    return reply, needs
