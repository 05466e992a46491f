"""``POST /v1/feedback`` on the probe listener: a user's verdict on an adaptive route's answer.

The body is ``{"request_id": str, "good": bool}`` (optionally ``"decision"``: the route the
caller believes served it; another route's id is then refused): the ``x-request-id`` the answer
carried. A good or bad answer updates the posterior of the arm that served it; silence past the
route's ``feedback_window_s`` already counts as good.

Answers: 200 ``{"outcome": "good" | "bad"}``; 404 ``unknown`` (no adaptive route served that id,
or it was forgotten); 409 ``expired`` (the window had passed: the silence stands), ``repeated``
(already answered) or ``wrong_route``; 400 naming the field that is wrong; 403 for a caller not
allowed; 503 when no store that is up knows the id and one is down (nothing is recorded; try
again). Each outcome is counted
in ``truthlens_feedback_total``.

Who may call it: by default only the host itself (a loopback peer), since the probe listener is
often reachable by the cluster's monitoring. With ``TRUTHLENS_FEEDBACK_TOKEN`` set, any peer that
sends ``Authorization: Bearer <token>`` may (an application backend relaying its users' thumbs).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from collections.abc import Callable
from typing import Any

from truthlens.gateway.core.probes import CheckResult
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.policy.adaptive.choice import Bandits
from truthlens.gateway.policy.adaptive.store import StoreUnavailable, now
from truthlens.gateway.policy.config import Config
from truthlens.modes.adaptive import AdaptiveOptions

TOKEN_ENV = "TRUTHLENS_FEEDBACK_TOKEN"
MAX_ID_CHARS = 256
_STATUS = {"good": 200, "bad": 200, "unknown": 404, "expired": 409, "repeated": 409, "wrong_route": 409}


class FeedbackHandler:
    """Called by the probe listener's threads; the stores block, which is fine there."""

    def __init__(self, config: Callable[[], Config], bandits: Bandits, telemetry: Telemetry,
                 token: str | None = None) -> None:
        self._config = config
        self._bandits = bandits
        self._telemetry = telemetry
        self._token = token if token is not None else os.environ.get(TOKEN_ENV) or None

    def __call__(self, body: bytes, peer: str, authorization: str | None) -> CheckResult:
        if not self._allowed(peer, authorization):
            hint = f"send Authorization: Bearer <{TOKEN_ENV}>" if self._token else (
                f"only this host may send feedback; set {TOKEN_ENV} to let other hosts send it with a bearer token")
            return 403, {"error": f"not allowed from {peer}: {hint}"}
        try:
            request_id, good, decision = _parse(body)
        except ValueError as exc:
            return 400, {"error": str(exc)}
        stores = _stores(self._config())
        if not stores:
            return 404, {"error": "no adaptive route is configured", "outcome": "unknown"}
        outcome, down = "unknown", []
        for url in stores:  # the id is in one of them: a store that is down may be the one
            try:
                outcome = self._bandits.store(url).feedback(request_id, good, decision, now())
            except StoreUnavailable as exc:
                down.append(str(exc))
                continue
            if outcome != "unknown":
                break
        if outcome == "unknown" and down:
            self._telemetry.record_feedback("unavailable")
            return 503, {"error": f"an adaptive store is unavailable ({'; '.join(down)}); nothing was recorded",
                         "outcome": "unavailable"}
        self._telemetry.record_feedback(outcome)
        return _STATUS[outcome], {"request_id": request_id, "outcome": outcome}

    def _allowed(self, peer: str, authorization: str | None) -> bool:
        if self._token and authorization is not None:
            return hmac.compare_digest(authorization.encode(), f"Bearer {self._token}".encode())
        try:
            return ipaddress.ip_address(peer).is_loopback
        except ValueError:
            return False


def _parse(body: bytes) -> tuple[str, bool, str | None]:
    try:
        doc: Any = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise ValueError("the body is not JSON") from None
    if not isinstance(doc, dict):
        raise ValueError("the body must be a JSON object: {\"request_id\": ..., \"good\": true|false}")
    unknown = sorted(set(doc) - {"request_id", "good", "decision"})
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (expected request_id, good, decision)")
    request_id = doc.get("request_id")
    if not isinstance(request_id, str) or not request_id.strip() or len(request_id) > MAX_ID_CHARS:
        raise ValueError(f"request_id: must be the answer's x-request-id (a string of 1 to {MAX_ID_CHARS} characters)")
    good = doc.get("good")
    if not isinstance(good, bool):
        raise ValueError("good: must be true or false")
    decision = doc.get("decision")
    if decision is not None and not isinstance(decision, str):
        raise ValueError("decision: must be a decision's name")
    return request_id, good, decision


def _stores(config: Config) -> list[str]:
    """The stores of the config's adaptive routes, each once, in file order."""
    routes = [config.hallucination, *(d.route for d in config.decisions if d.route is not None)]
    urls = [r.options.store for r in routes if isinstance(r.options, AdaptiveOptions)]
    return list(dict.fromkeys(urls))
