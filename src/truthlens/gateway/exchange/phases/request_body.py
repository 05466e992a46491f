"""Request body (BUFFERED): match the route first on what the headers tell, decode the request
(chat or Responses, as the exchange's endpoint reads it) once, within the route's size limit,
only when a check or the context field needs it, remember what to check, and forward the
request with the context extension field stripped."""

from __future__ import annotations

from dataclasses import dataclass, replace

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.detector.prompt import read_task
from truthlens.gateway.apis.context import chain
from truthlens.gateway.apis.interface import DecodedRequest, Endpoint, ParsedRequest
from truthlens.gateway.core.errors import GatewayError
from truthlens.gateway.exchange import domains, mutations, ungrounded
from truthlens.gateway.exchange.phases import encoded_request
from truthlens.gateway.exchange.phases.check import skip
from truthlens.gateway.exchange.phases.state import CheckedRequest, Runtime, StreamState
from truthlens.gateway.policy import decisions
from truthlens.gateway.policy.config import Config, Decision
from truthlens.gateway.policy.decisions import RequestFacts


@dataclass(frozen=True, slots=True)
class _Routed:
    decision: Decision | None
    decoded: DecodedRequest | None  # None: no route needed it, or it failed
    error: GatewayError | None = None
    # Set when a domain rule must see the user's text's domain before the match is known
    # (``decision`` is then the match without a domain): the decoded request, and its facts.
    undecided: DecodedRequest | None = None
    facts: RequestFacts | None = None

    def facts_with(self, domain: str | None) -> RequestFacts:
        assert self.facts is not None
        return replace(self.facts, domain=domain)


def whole_body(state: StreamState, msg: pb.ProcessingRequest) -> bytes | None:
    """The request body once its last chunk is here; None while chunks are still coming (each
    of them is answered unchanged: anything but BUFFERED)."""
    chunk = msg.request_body
    if chunk.end_of_stream and not state.request_body:
        return chunk.body  # BUFFERED: the whole body in one message, used without a copy
    state.request_body += chunk.body
    if not chunk.end_of_stream:
        return None
    body = bytes(state.request_body)
    state.request_body.clear()
    return body


async def handle(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    body = whole_body(state, msg)
    if body is None:
        return mutations.passthrough("request_body")
    info = state.info
    assert info is not None  # the state machine only allows a body after its headers
    if encoded_request.coding(info.headers) is not None:
        return encoded_request.handle(state, rt)
    config = state.config

    with rt.telemetry.span("truthlens.decision", path=info.path) as span:
        facts = RequestFacts(info.path, info.method, info.headers, repeated=info.repeated)
        routed = _route(config, state.api, facts, body)
        if routed.undecided is not None:  # a domain rule decides: classify the user's text first
            state.domain = await domains.classify(config, routed.undecided.question, state.lease.services, rt)
            routed = _Routed(decisions.match(config, routed.facts_with(state.domain.name)), routed.undecided)
            span.set_attribute("truthlens.domain", state.domain.header())
        decision = routed.decision
        span.set_attribute("truthlens.decision", decision.name if decision is not None else "")
    route = decision.route if decision is not None else None
    state.matched = decision is not None
    if decision is None or route is None:
        return _forward_unchecked(body, routed.decoded, config, state.api)
    if routed.error is not None:
        return _cannot_check(state, rt, decision, routed.error, body)
    assert routed.decoded is not None
    chain.MEMORY.note_warning(route.warning_template)  # never read back as context
    chain.SCOPE.set(chain.scope_of(info.headers))  # a chain's earlier answers: this client's only
    try:
        request = routed.decoded.read(route.context)
    except GatewayError as exc:
        return _cannot_check(state, rt, decision, exc, body)
    if state.domain is None and config.domains is not None and route.mode == "adaptive":
        # An adaptive route keeps its posteriors per domain: read it even when headers chose the route.
        state.domain = await domains.classify(config, request.question, state.lease.services, rt)
    if len(body) > route.max_body_bytes:
        return _cannot_check(state, rt, decision, GatewayError("too_large", "over max_body_bytes"), body)
    if ungrounded.needs_skipping(route, request):  # no context, no check (the route's no_context)
        shown = ungrounded.skip(state, rt, route, decision.name, near=request.near_template)
        return mutations.refusal_response(state.api, shown.refusal) if shown.refusal else _forward(request)
    read = read_task(request.passages, request.question)  # what the detector will check it as
    task = read.name
    if task == "ungroundable":  # an opinion, a translation, ...: nothing in the context can ground it
        ungrounded.skip(state, rt, route, decision.name, ungrounded.UNGROUNDABLE_REASON, task=task)
        return _forward(request)
    state.checked = CheckedRequest(
        decision=decision,
        route=route.for_task(read.shape),  # the τ in force for this task (policy/thresholds.py)
        request=request,
        include_spans=_asks(info.headers.get(route.spans_request_header.lower())),
        services=state.lease.services,
        task=task,
    )
    return _forward(request)


def route_request(config: Config, api: Endpoint, facts: RequestFacts, body: bytes) -> Decision | None:
    """The decision of a request with this body (nothing else is kept of its decoding; its
    domain is not classified: domain rules do not hold)."""
    return _route(config, api, facts, body).decision


def _route(config: Config, api: Endpoint, facts: RequestFacts, body: bytes) -> _Routed:
    """The decision for this request, decoding the body only if a route may check it."""
    early = decisions.match_before_body(config, facts)
    if early is None or (isinstance(early, Decision) and early.route is None):
        return _Routed(early, None)
    # The limit is the matched route's; while model or keyword rules are undecided, the largest
    # any route allows (the matched route's own limit is applied once it is known).
    limit = early.route.max_body_bytes if isinstance(early, Decision) and early.route else _largest_limit(config)
    try:
        decoded = api.decode_request(body, max_bytes=limit)
    except GatewayError as exc:
        # Rules on the model or the user's text then see empty values: a route that needs
        # them to match stays untouched.
        return _Routed(early if isinstance(early, Decision) else decisions.match(config, facts), None, exc)
    if isinstance(early, Decision):
        return _Routed(early, decoded)
    facts = RequestFacts(facts.path, facts.method, facts.headers, decoded.model, decoded.question, facts.repeated)
    if config.domains is not None:
        return _Routed(decisions.match(config, facts), decoded, undecided=decoded, facts=facts)
    return _Routed(decisions.match(config, facts), decoded)


def _cannot_check(
    state: StreamState, rt: Runtime, decision: Decision, error: GatewayError, body: bytes
) -> pb.ProcessingResponse:
    """The route's check cannot run on this body: refused on a fail-closed route, else the
    request goes on unchanged (less the context extension field, whatever its shape or the
    body's size: Envoy's buffer bounds it) and its answer is marked unavailable."""
    route = decision.route
    assert route is not None
    shown = skip(state, rt, route, decision.name, error.reason, str(error))
    if shown.refusal is not None:
        return mutations.refusal_response(state.api, shown.refusal)
    return _without_context_field(state.api, body, route.context.extension_field)


_NO = frozenset({"", "0", "false", "no", "off"})


def _asks(value: str | None) -> bool:
    """A yes/no request header: present with any value but an explicit no (``false``, ``0``, ...)."""
    return value is not None and value.strip().lower() not in _NO


def _largest_limit(config: Config) -> int:
    limits = [d.route.max_body_bytes for d in config.decisions if d.route is not None]
    return max(limits, default=config.hallucination.max_body_bytes)


def strip_only(body: bytes, config: Config, api: Endpoint) -> pb.ProcessingResponse:
    """The request unchecked, less the context extension field (when it mentions it; the body
    is not read as a request of either API)."""
    return _without_context_field(api, body, config.hallucination.context.extension_field)


def _forward_unchecked(
    body: bytes, decoded: DecodedRequest | None, config: Config, api: Endpoint
) -> pb.ProcessingResponse:
    """The gateway's context field never reaches the upstream, checked or not; an unchecked
    request that does not mention it is not decoded at all."""
    context = config.hallucination.context
    if decoded is None:
        field = context.extension_field
        if field is None or not api.mentions(body, field):
            return mutations.passthrough("request_body")
    try:
        return _forward((decoded or api.decode_request(body)).read(context))
    except GatewayError:
        # Unreadable as a request of its API (a malformed context field, say): the field still goes.
        return _without_context_field(api, body, context.extension_field)


def _without_context_field(api: Endpoint, body: bytes, field: str | None) -> pb.ProcessingResponse:
    """The request as it came, less the context extension field (whatever its shape); refused
    with a 400 when the body mentions the field but is not JSON (see :func:`_unremovable`)."""
    try:
        stripped = api.without_field(body, field, strict=True) if field else None
    except GatewayError as exc:
        return _unremovable(api, exc)
    return mutations.body_reply("request_body", body=stripped) if stripped is not None else mutations.passthrough(
        "request_body")


def _unremovable(api: Endpoint, error: GatewayError) -> pb.ProcessingResponse:
    """A body that is not JSON but mentions the context field: the field cannot be cut out of
    it, and forwarding it would hand the upstream the passages (often private documents) the
    gateway promises to keep from it. The upstream would refuse invalid JSON with a 400 anyway,
    so the client loses nothing by getting that 400 here, with the reason named."""
    return mutations.field_unremovable(api, str(error))


def _forward(request: ParsedRequest) -> pb.ProcessingResponse:
    if request.forward_body is not None:
        return mutations.body_reply("request_body", body=request.forward_body)
    return mutations.passthrough("request_body")
