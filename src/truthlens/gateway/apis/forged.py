"""The verdict is the gateway's alone: what an upstream writes in its name — a ``truthlens``
field in any object, an event whose ``type`` or SSE ``event`` name is ``truthlens.*`` — found by
meaning (after JSON decoding, so ``"truthl\\u0065ns"`` is ``truthlens``), and removed from JSON
bodies and SSE events, on every route, checked or not.

The raw text is tested first (:func:`json_doc.mentions`: the name spelt out or with ASCII
``\\u00XX`` escapes); an event that cannot name the verdict is never decoded here, which keeps
the cost per streamed token two substring searches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from truthlens.gateway.apis import json_doc
from truthlens.gateway.apis.sse import SSEEvent, encode_event

DETAILS_FIELD = "truthlens"  # the gateway's verdict field in a body or a stream's chunk


def names_verdict(name: str | None) -> bool:
    """Whether an event ``type`` or SSE ``event`` name speaks for the gateway (``truthlens.*``)."""
    return name is not None and name.startswith(DETAILS_FIELD)


def without_details(body: bytes) -> bytes | None:
    """``body`` (JSON) without any ``truthlens`` field the upstream wrote, at any depth, or None
    when it has none, or is not JSON (no reader finds a verdict in it). A document too deep to
    decode loses the fields all the same (:func:`json_doc.without_key_text`)."""
    if not json_doc.mentions(body, DETAILS_FIELD):
        return None
    try:
        doc = json_doc.loads(body)
    except json_doc.TooDeep:
        try:
            cut = json_doc.without_key_text(body.decode("utf-8", "surrogatepass"), DETAILS_FIELD)
        except ValueError:
            return None  # its brackets do not match: not JSON to any reader
        return cut.encode("utf-8", "surrogatepass") if cut is not None else None
    except ValueError:
        return None
    cleaned = json_doc.without_key(doc, DETAILS_FIELD)
    return None if cleaned is doc else json_doc.dumps(cleaned).encode("utf-8")


def scrub_event(event: SSEEvent, is_verdict: Callable[[dict[str, Any]], bool]) -> SSEEvent | None:
    """``event`` as the client may see it: None for a verdict the upstream wrote (an ``event:``
    name ``truthlens.*``, an object ``is_verdict`` says is one, or an event that names the
    verdict in a value nested too deep to read: another reader may read it); the event without
    its ``truthlens`` fields (wherever they sit) when it only carries some; else ``event``
    itself. Data that is not JSON stays: no JSON reader finds a verdict in it."""
    data = event.data
    # Once per streamed token: the usual event (no name, no escape, no verdict) leaves after two
    # substring searches, with no call.
    if event.event is None and DETAILS_FIELD not in data and "\\u00" not in data:
        return event
    if names_verdict(event.event):
        return None
    if not event.has_data or not json_doc.mentions(data, DETAILS_FIELD):
        return event
    try:
        doc = json_doc.loads(data)
    except json_doc.TooDeep:
        return None
    except ValueError:
        return event
    if isinstance(doc, dict) and is_verdict(doc):
        return None
    cleaned = json_doc.without_key(doc, DETAILS_FIELD)
    if cleaned is doc:
        return event  # the name is only in a text
    data = json_doc.dumps(cleaned)
    return SSEEvent(data, event.event, event.id, encode_event(data, event=event.event, id=event.id))
