"""``POST /v1/check`` on the probe listener: check a (context, question, answer) with the serving
detector and a route's settings, no generation, no upstream, no Envoy.

The body is ``{"context": [str, ...], "question": str, "answer": str}`` (optionally ``"route"``:
a decision's name, whose threshold, detection budget and ``no_context`` policy apply; default:
the global ``hallucination`` settings), or ``{"items": [...]}`` of those. The answer is what
``truthlens detect`` prints per line — ``score``, ``detected``, ``spans`` — plus the
explanations the gateway gives a client: each span's details and the answer's ``reason`` /
``why``. What the gateway would not check it does not check either: no context (on a route
whose ``no_context`` is not ``check``) is ``skipped``/``no_context``, an answer with no text
``skipped``/``no_text``.

A dry run never stalls live traffic (:class:`Limits`): a request holds at most ``max_items``
items and ``max_chars`` characters (413 over either), at most ``max_concurrent`` requests are
checked at once (429 beyond), a request's items are checked one after another, and their rows
run at the detector's background priority (:data:`truthlens.detector.batcher.BACKGROUND`):
live exchanges' rows go first, and so do their sentence embedder batches
(:mod:`truthlens.evidence.priority`).

Statuses: 400 naming the field that is wrong (JSON nested too deep, a number too long, a lone
surrogate, an input the detector refuses); 404 for an unknown route; 413 over a limit; 429
while ``max_concurrent`` requests are checked; 503 with the reason while the detector loads,
is busy or unavailable (a batch: when no item could be checked). The listener runs on its own
threads; the detector runs on the server's event loop (``run_coroutine_threadsafe``), like any
exchange's.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from truthlens.detector.batcher import BACKGROUND
from truthlens.detector.prompt import read_task
from truthlens.detector.types import Detection, DetectionInput, Detector, InvalidInput
from truthlens.gateway.apis import json_doc
from truthlens.gateway.core.errors import normalize_reason
from truthlens.gateway.core.probes import MAX_CHECK_BODY_BYTES, CheckResult
from truthlens.gateway.policy.config import Config, RouteSettings
from truthlens.gateway.policy.explanations import choice_reason, span_details

MAX_BODY_BYTES = MAX_CHECK_BODY_BYTES
FIELDS = ("context", "question", "answer", "route")
# The gateway's labels for what it does not check (truthlens.gateway.exchange.ungrounded).
NO_CONTEXT, NO_TEXT = "no_context", "no_text"


@dataclass(frozen=True, slots=True)
class Limits:
    """What one dry run may ask of the serving detector (``serve --check-max-*``)."""

    max_items: int = 64  # items per request
    max_chars: int = 2_000_000  # characters per request: every item's context, question and answer
    max_concurrent: int = 2  # requests checked at once; more are answered 429

    def __post_init__(self) -> None:
        for name in ("max_items", "max_chars", "max_concurrent"):
            if getattr(self, name) < 1:
                raise ValueError(f"--check-{name.replace('_', '-')} must be >= 1")



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
                 detector: Callable[[], Detector | None], limits: Limits | None = None) -> None:
        self._loop = loop
        self._config = config
        self._detector = detector  # None until the detector has loaded
        self.limits = limits or Limits()
        self._slots = threading.BoundedSemaphore(self.limits.max_concurrent)

    def __call__(self, body: bytes) -> CheckResult:
        try:
            batch, requests = parse(body, self.limits)
            config = self._config()
            routes = [route_settings(config, r.route, f"items[{i}].route" if batch else "route")
                      for i, r in enumerate(requests)]
        except BadRequest as exc:
            return exc.status, {"error": str(exc)}
        detector = self._detector()
        if detector is None:
            return 503, {"error": "the detector is loading", "reason": "not_ready"}
        if not self._slots.acquire(blocking=False):
            return 429, {"error": f"{self.limits.max_concurrent} dry runs are being checked (--check-max-concurrent); "
                                  "retry when one has answered", "reason": "busy"}
        try:
            results = self._run(detector, requests, routes)
        finally:
            self._slots.release()
        if results is None:
            return 503, {"error": "the detector did not answer in time", "reason": "detector_timeout"}
        if not batch:
            return _status([results[0]]), results[0]
        return _status(results), {"results": results}

    def _run(self, detector: Detector, requests: list[_Request],
             routes: list[RouteSettings]) -> list[dict[str, Any]] | None:
        # Items go one after another, each within its route's detection budget.
        budget = sum(r.budgets.detection_s for r in routes)
        future = asyncio.run_coroutine_threadsafe(_check_all(detector, requests, routes), self._loop)
        try:
            return future.result(timeout=budget + 5.0)
        except TimeoutError:
            future.cancel()
            return None


def _status(results: list[dict[str, Any]]) -> int:
    """200 when some item has an answer; 400 when every item's input was refused; else 503."""
    if any("error" not in r for r in results):
        return 200
    return 400 if all(r.get("reason") == "invalid_input" for r in results) else 503


def parse(body: bytes, limits: Limits | None = None) -> tuple[bool, list[_Request]]:
    """``(is_batch, requests)``; :class:`BadRequest` naming the field otherwise."""
    limits = limits or Limits()
    if len(body) > MAX_BODY_BYTES:
        raise BadRequest(413, f"the body is over {MAX_BODY_BYTES} bytes")
    try:
        doc = json_doc.loads(body.decode("utf-8"))
    except ValueError as exc:  # invalid UTF-8 or JSON, nested too deep, a number too long
        raise BadRequest(400, f"the body is not JSON the check reads: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest(400, "the body must be a JSON object: {context, question, answer} or {items: [...]}")
    if "items" not in doc:
        return False, _within(limits, [_request(doc, "")])
    items = doc["items"]
    if set(doc) != {"items"}:
        raise BadRequest(400, f"{sorted(set(doc) - {'items'})[0]}: unknown field beside items")
    if not isinstance(items, list) or not items:
        raise BadRequest(400, "items: must be a non-empty list of {context, question, answer}")
    if len(items) > limits.max_items:
        raise BadRequest(413, f"items: {len(items)} items; at most {limits.max_items} per request "
                              "(--check-max-items)")
    return True, _within(limits, [_request(item, f"items[{i}].") for i, item in enumerate(items)])


def _within(limits: Limits, requests: list[_Request]) -> list[_Request]:
    chars = sum(len(r.item.answer) + len(r.item.question) + sum(map(len, r.item.context)) for r in requests)
    if chars > limits.max_chars:
        raise BadRequest(413, f"the request holds {chars} characters of context, questions and answers; at most "
                              f"{limits.max_chars} per request (--check-max-chars): send fewer items at a time")
    return requests


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
    for name, text in [*((f"context[{i}]", p) for i, p in enumerate(context)),
                       ("question", doc["question"]), ("answer", doc["answer"])]:
        _text(text, f"{where}{name}")
    route = doc.get("route")
    if route is not None and not isinstance(route, str):
        raise BadRequest(400, f"{where}route: must be a decision's name")
    return _Request(DetectionInput(context=tuple(context), question=doc["question"], answer=doc["answer"]), route)


def _text(text: str, field: str) -> None:
    """Refuse a string that is not text: JSON's ``\\ud800`` escapes decode to lone surrogates,
    which no tokenizer (and no UTF-8 encoder) takes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(400, f"{field}: holds a lone surrogate ({text[exc.start]!r} at {exc.start}), "
                              "not text") from None


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
    # Background priority: the detector runs live exchanges' rows first (this task's context).
    BACKGROUND.set(True)
    return [await _check(detector, r, s) for r, s in zip(requests, routes, strict=True)]


async def _check(detector: Detector, request: _Request, route: RouteSettings) -> dict[str, Any]:
    skipped = _skip_reason(request.item, route)
    if skipped is not None:
        return skipped_result(skipped, request.route)
    # The τ in force for the task this request is read as (a cost rule's τ depends on it).
    route = route.for_task(read_task(request.item.context, request.item.question).shape)
    try:
        detection = await detector.detect(request.item, threshold=route.threshold,
                                          timeout_s=route.budgets.detection_s)
    except InvalidInput as exc:
        return {"error": str(exc), "reason": "invalid_input"}
    answer = describe(detection, request.route)
    if "score" in answer:  # the τ in force for the task: a number, or derived from the route's costs
        answer["threshold"] = route.threshold
    return answer


def _skip_reason(item: DetectionInput, route: RouteSettings) -> str | None:
    """What the gateway would not check, in its order: no context (unless the route checks such
    requests), then an answer with no text."""
    if route.no_context != "check" and not any(p.strip() for p in item.context):
        return NO_CONTEXT
    return NO_TEXT if not item.answer.strip() else None


def skipped_result(reason: str, route: str | None) -> dict[str, Any]:
    """The gateway's ``x-truthlens-detected: skipped`` with its reason: neither clean nor flagged."""
    why = ("no context to check the answer against (the route's no_context policy)" if reason == NO_CONTEXT
           else "the answer has no text to check")
    return {"score": None, "detected": "skipped", "spans": [], "reason": reason, "why": why, "route": route}


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
