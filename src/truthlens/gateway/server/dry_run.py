"""``POST /v1/check`` on the probe listener: check a (context, question, answer) with the serving
detector and a route's settings, no generation, no upstream, no Envoy.

The body is ``{"context": [str, ...], "question": str, "answer": str}`` (optionally ``"route"``:
a decision's name, whose threshold and detection budget apply; default: the global
``hallucination`` settings), or ``{"items": [...]}`` of those (at most :data:`MAX_ITEMS`). The
answer is what ``truthlens detect`` prints per line — ``score``, ``detected``, ``spans`` — plus the
explanations the gateway gives a client: each span's details and the answer's ``reason`` / ``why``.

Statuses: 400 naming the field that is wrong; 404 for an unknown route; 413 over
:data:`MAX_BODY_BYTES` or :data:`MAX_ITEMS`; 503 with the reason while the detector loads, is busy
or unavailable (a batch: when no item could be checked). The listener runs on its own threads;
the detector runs on the server's event loop (``run_coroutine_threadsafe``), like any exchange's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from truthlens.detector.types import Detection, DetectionInput, Detector, InvalidInput
from truthlens.gateway.core.errors import normalize_reason
from truthlens.gateway.core.probes import MAX_CHECK_BODY_BYTES, CheckResult
from truthlens.gateway.policy.config import Config, RouteSettings
from truthlens.gateway.policy.explanations import choice_reason, span_details

MAX_BODY_BYTES = MAX_CHECK_BODY_BYTES
MAX_ITEMS = 64
FIELDS = ("context", "question", "answer", "route")


class BadRequest(ValueError):
    """The body is not a check request; the message names the field."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class _Request:
    item: DetectionInput
    route: str | None


class DryRunCheck:
    """The handler the probe listener calls with a request body (from its own thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, config: Callable[[], Config],
                 detector: Callable[[], Detector | None]) -> None:
        self._loop = loop
        self._config = config
        self._detector = detector  # None until the detector has loaded

    def __call__(self, body: bytes) -> CheckResult:
        try:
            batch, requests = parse(body)
            config = self._config()
            routes = [route_settings(config, r.route, f"items[{i}].route" if batch else "route")
                      for i, r in enumerate(requests)]
        except BadRequest as exc:
            return exc.status, {"error": str(exc)}
        detector = self._detector()
        if detector is None:
            return 503, {"error": "the detector is loading", "reason": "not_ready"}
        budget = max(r.budgets.detection_s for r in routes)
        future = asyncio.run_coroutine_threadsafe(_check_all(detector, requests, routes), self._loop)
        try:
            results = future.result(timeout=budget + 5.0)
        except TimeoutError:
            future.cancel()
            return 503, {"error": "the detector did not answer in time", "reason": "detector_timeout"}
        if not batch:
            return (503 if "error" in results[0] else 200), results[0]
        every_failed = all("error" in r for r in results)
        return (503 if every_failed else 200), {"results": results}


def parse(body: bytes) -> tuple[bool, list[_Request]]:
    """``(is_batch, requests)``; :class:`BadRequest` naming the field otherwise."""
    if len(body) > MAX_BODY_BYTES:
        raise BadRequest(413, f"the body is over {MAX_BODY_BYTES} bytes")
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(400, f"the body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest(400, "the body must be a JSON object: {context, question, answer} or {items: [...]}")
    if "items" not in doc:
        return False, [_request(doc, "")]
    items = doc["items"]
    if set(doc) != {"items"}:
        raise BadRequest(400, f"{sorted(set(doc) - {'items'})[0]}: unknown field beside items")
    if not isinstance(items, list) or not items:
        raise BadRequest(400, "items: must be a non-empty list of {context, question, answer}")
    if len(items) > MAX_ITEMS:
        raise BadRequest(413, f"items: {len(items)} items; at most {MAX_ITEMS} per request")
    return True, [_request(item, f"items[{i}].") for i, item in enumerate(items)]


def _request(doc: object, where: str) -> _Request:
    if not isinstance(doc, dict):
        raise BadRequest(400, f"{where.rstrip('.')}: must be an object with context, question, answer")
    unknown = sorted(str(k) for k in doc if k not in FIELDS)
    if unknown:
        raise BadRequest(400, f"{where}{unknown[0]}: unknown field (expected {', '.join(FIELDS)})")
    context = doc.get("context")
    if not isinstance(context, list) or not all(isinstance(p, str) for p in context):
        raise BadRequest(400, f"{where}context: must be a list of strings (the passages)")
    for name in ("question", "answer"):
        if not isinstance(doc.get(name), str):
            raise BadRequest(400, f"{where}{name}: must be a string")
    route = doc.get("route")
    if route is not None and not isinstance(route, str):
        raise BadRequest(400, f"{where}route: must be a decision's name")
    return _Request(DetectionInput(context=tuple(context), question=doc["question"], answer=doc["answer"]), route)


def route_settings(config: Config, name: str | None, field: str) -> RouteSettings:
    """The named decision's route settings, else the global ``hallucination`` settings."""
    if name is None:
        return config.hallucination
    for decision in config.decisions:
        if decision.name == name:
            if decision.route is None:
                raise BadRequest(400, f"{field}: decision {name!r} does not check answers (detection is off)")
            return decision.route
    known = ", ".join(d.name for d in config.decisions if d.route is not None) or "none"
    raise BadRequest(404, f"{field}: no decision named {name!r} (checked decisions: {known})")


async def _check_all(detector: Detector, requests: list[_Request], routes: list[RouteSettings]) -> list[dict[str, Any]]:
    return list(await asyncio.gather(*(_check(detector, r, s) for r, s in zip(requests, routes, strict=True))))


async def _check(detector: Detector, request: _Request, route: RouteSettings) -> dict[str, Any]:
    try:
        detection = await detector.detect(request.item, threshold=route.threshold,
                                          timeout_s=route.budgets.detection_s)
    except InvalidInput as exc:
        return {"error": str(exc), "reason": "invalid_input"}
    answer = describe(detection, request.route)
    if "score" in answer:  # the τ in force: a number, or derived from the route's costs
        answer["threshold"] = route.threshold
    return answer


def describe(detection: Detection, route: str | None) -> dict[str, Any]:
    """``truthlens detect``'s line for one answer, with the gateway's explanations."""
    if detection.status == "unavailable":
        label = detection.reason or "detector_error"
        return {"error": f"detector unavailable: {label}", "reason": normalize_reason(label)}
    return {
        "score": detection.score,
        "detected": detection.detected,
        "spans": [span_details(s) for s in detection.spans],
        **choice_reason(detection, with_text=True),
        "route": route,
    }
