"""Which ext_proc phases one exchange needs, decided from its request headers alone.

Envoy is told in the reply to the request headers (``mode_override``) to skip every phase the
exchange does not need, so a request no route checks costs one message instead of four. What an
unchecked exchange still needs:

- the request body, when one follows and the config names a context extension field: the field
  never reaches the upstream, checked or not, and only the body tells whether it is there;
- nothing of the response: the reply moves the exchange onto the route without the unchecked
  mark (:mod:`truthlens.gateway.core.unchecked_route`), so Envoy forwards the answer as it
  would alone (its headers, framing and bytes as they come, nothing held at the processor: an
  upstream that closes right after a short body still delivers it), and the upstream's
  ``x-truthlens-*`` headers are removed by Envoy's ``response_headers_to_remove`` on every route.

A checked route, or a request whose decision depends on its body (model or keyword rules), keeps
every phase a check may use. No exchange needs the trailers.
"""

from __future__ import annotations

from dataclasses import dataclass

from truthlens.gateway.policy import decisions
from truthlens.gateway.policy.config import Config, Decision
from truthlens.gateway.policy.decisions import RequestFacts


@dataclass(frozen=True, slots=True)
class PhasePlan:
    request_body: bool  # Envoy sends the request body (BUFFERED)
    response: bool  # Envoy sends the response headers (their reply picks the body's mode)
    matched: bool | None  # a decision matched; None: the body decides
    unchecked: bool  # known now: no check will run (no decision, or detection off for it)

    @property
    def headers_only(self) -> bool:
        """Nothing after the request headers: the exchange is done with its first message."""
        return not (self.request_body or self.response)


_UNDECIDED = PhasePlan(request_body=True, response=True, matched=None, unchecked=False)
_CHECKED = PhasePlan(request_body=True, response=True, matched=True, unchecked=False)


def plan(config: Config, facts: RequestFacts, *, has_body: bool) -> PhasePlan:
    """The phases the exchange with these request headers needs (``has_body``: a request body
    follows the headers)."""
    early = decisions.match_before_body(config, facts)
    if isinstance(early, Decision) and early.route is not None:
        return _CHECKED
    if early is not None and not isinstance(early, Decision):
        return _UNDECIDED  # a rule on the model or the user's text decides
    matched = early is not None
    strip_field = has_body and config.hallucination.context.extension_field is not None
    return PhasePlan(request_body=strip_field, response=False, matched=matched, unchecked=True)
