"""An exchange over the worker's stream cap (``gateway.max_streams``): not checked at all, at once.

On a fail-open route the request goes on unchanged but for the context extension field (it
never reaches the upstream); the answer is not read and is marked ``unavailable`` (reason
``worker_overloaded``), with any X-TruthLens-* header the upstream wrote removed.

On a fail-closed route the answer must not reach the client unchecked, and it cannot be checked:
the exchange is refused (503 ``worker_overloaded``) as soon as its route is known — at the
request headers when they decide it, else at the request body (decoded only when some
fail-closed route could match) — before the upstream is asked, so the refusal costs the
upstream nothing. (A request without a body is never checked, overloaded or not: only routes
its headers decide can refuse it.)
"""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange import mutations
from truthlens.gateway.exchange.phases import encoded_request
from truthlens.gateway.exchange.phases.request_body import route_request, strip_only, whole_body
from truthlens.gateway.exchange.phases.request_headers import header_dict
from truthlens.gateway.exchange.phases.response_headers import reply, spoofed_headers
from truthlens.gateway.exchange.phases.state import StreamState
from truthlens.gateway.policy import decisions
from truthlens.gateway.policy.config import Config, Decision
from truthlens.gateway.policy.decisions import RequestFacts
from truthlens.gateway.policy.presentation import unavailable_headers, unchecked

REASON = "worker_overloaded"


def handle(state: StreamState, msg: pb.ProcessingRequest, kind: str) -> pb.ProcessingResponse:
    """The reply to any message after the request headers (see :func:`refuse_early` for those)."""
    if kind == "request_body":
        body = whole_body(state, msg)
        if body is None:
            return mutations.passthrough("request_body")
        refusal = _refusal(state, _body_decision(state, body))
        if refusal is None:
            refusal = encoded_request.refusal(state)
        return refusal if refusal is not None else strip_only(body, state.config, state.api)
    if kind == "response_headers":
        spoofed = spoofed_headers(header_dict(msg.response_headers.headers))
        return reply(unavailable_headers(state.config.hallucination, REASON), spoofed, "none")
    return mutations.passthrough(kind)  # type: ignore[arg-type]


def refuse_early(state: StreamState) -> pb.ProcessingResponse | None:
    """The refusal of a fail-closed exchange its request headers already route; None otherwise."""
    early = decisions.match_before_body(state.config, _facts(state))
    return _refusal(state, early if isinstance(early, Decision) else None)


def _facts(state: StreamState) -> RequestFacts:
    info = state.info
    assert info is not None  # the state machine only allows later phases after the headers
    # Every value of a repeated header, as the request phases read them: an overloaded exchange
    # must meet the same decision as when the worker has room (a header sent twice, one value
    # a fail-closed route's, is refused here rather than released unchecked).
    return RequestFacts(info.path, info.method, info.headers, repeated=info.repeated)


def _body_decision(state: StreamState, body: bytes) -> Decision | None:
    """The decision the body settles, decoded only when a fail-closed route could be it (an
    overloaded worker does no work a fail-open exchange does not need)."""
    if not _has_closed_route(state.config):
        return None
    return route_request(state.config, state.api, _facts(state), body)


def _has_closed_route(config: Config) -> bool:
    return any(d.route is not None and d.route.fail_policy == "closed" for d in config.decisions)


def _refusal(state: StreamState, decision: Decision | None) -> pb.ProcessingResponse | None:
    route = decision.route if decision is not None else None
    if decision is None or route is None or route.fail_policy != "closed":
        return None
    refusal = unchecked(route, decision.name, REASON).refusal
    return None if refusal is None else mutations.refusal_response(state.api, refusal)
