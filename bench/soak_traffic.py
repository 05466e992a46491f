"""The soak's traffic: request kinds, the routes and upstream script they need, and the check
that tells an intact response from a lost or corrupted one.

Every kind knows what the client may legitimately get back: the upstream's content (or a
legitimate rewrite: the standard mode's refinement, a warning added by the ``body`` action),
or a clear error that the kind provokes on purpose (a 400 for malformed JSON, the upstream's
500, a stream the upstream cut). Anything else is ``lost`` (no response) or ``corrupted``.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from truthlens.modes.prompts import REFINE_MARKER

Outcome = Literal["ok", "expected_error", "lost", "corrupted"]

# A typical RAG exchange: ~1.4k tokens of context in four passages, a ~150-token answer.
PASSAGES = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named after "
    "the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889 as the centerpiece "
    "of the 1889 World's Fair. Although initially criticised by some of France's leading artists and intellectuals "
    "for its design, it has since become a global cultural icon of France and one of the most recognisable "
    "structures in the world. " * 5,
    "The tower is 330 metres tall, about the same height as an 81-storey building, and the tallest structure in "
    "Paris. Its base is square, measuring 125 metres on each side. During its construction, the Eiffel Tower "
    "surpassed the Washington Monument to become the tallest human-made structure in the world, a title it held "
    "for 41 years until the Chrysler Building in New York City was finished in 1930. " * 5,
    "The tower has three levels for visitors, with restaurants on the first and second levels. The top level's "
    "upper platform is 276 metres above the ground, the highest observation deck accessible to the public in the "
    "European Union. Tickets can be purchased to ascend by stairs or lift to the first and second levels. " * 5,
    "Maintenance of the tower includes applying 60 tonnes of paint every seven years to protect it from rust. "
    "The tower has been repainted 19 times since it was built, and the colour has changed several times. " * 5,
]
GROUNDED = (
    "The Eiffel Tower stands on the Champ de Mars in Paris. It was designed and built by the company of the "
    "engineer Gustave Eiffel between 1887 and 1889 as the centerpiece of the 1889 World's Fair. It is 330 metres "
    "tall, its square base measures 125 metres on each side, and it was the tallest human-made structure in the "
    "world for 41 years, until the Chrysler Building was finished in 1930. Visitors can reach three levels, with "
    "restaurants on the first and second, and the upper platform of the top level is 276 metres above the ground. "
    "It is repainted every seven years with 60 tonnes of paint."
)
HALLUCINATED = (
    "The Eiffel Tower stands in Lyon. It was designed by the architect Charles Garnier and built between 1921 "
    "and 1925 for the Olympic Games. It is 512 metres tall, its round base measures 300 metres across, and it was "
    "the tallest structure in the world for 90 years. Visitors can reach seven levels by escalator, and the top "
    "platform is 480 metres above the ground. It has never been repainted because it is made of stainless steel "
    "donated by the city of Berlin."
)
REFINED = GROUNDED  # the scripted refinement fixes the flagged answer

STREAM_DELAY_S = 0.02  # ~40 chunks per stream: a fault lands mid-stream


def script() -> list[dict[str, Any]]:
    """The scripted upstream's rules, picked by a marker word in the user message (first match wins)."""
    return [
        {"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": REFINED}},
        {"name": "verifier-a-down", "match": {"model": "verifier-a"}, "reply": {"status": 500}},
        {"name": "verifier-b-down", "match": {"model": "verifier-b"}, "reply": {"status": 500}},
        {"name": "judge-down", "match": {"model": "judge"}, "reply": {"status": 500}},
        {"name": "upstream-500", "match": {"user": "[upstream-500]"}, "reply": {"status": 500}},
        {"name": "gzip", "match": {"user": "[gzip]"}, "reply": {"content": GROUNDED, "content_encoding": "gzip"}},
        {"name": "drop", "match": {"user": "[drop]"},
         "reply": {"content": HALLUCINATED, "drop_after_chunks": 5, "chunk_delay_s": STREAM_DELAY_S}},
        {"name": "grounded", "match": {"user": "[grounded]"},
         "reply": {"content": GROUNDED, "chunk_delay_s": STREAM_DELAY_S}},
        {"name": "hallucinated", "match": {"user": "[hallucinated]"},
         "reply": {"content": HALLUCINATED, "chunk_delay_s": STREAM_DELAY_S}},
    ]


def decision(name: str, route: str, priority: int, **configuration: Any) -> dict[str, Any]:
    return {
        "name": name,
        "priority": priority,
        "rules": {"operator": "AND", "conditions": [
            {"type": "path", "prefix": "/v1/chat/completions"},
            {"type": "header", "name": "x-soak-route", "value": route},
        ]},
        "plugins": [{"type": "hallucination", "configuration": {"enabled": True, **configuration}}],
    }


def decisions(revision: int = 0) -> list[dict[str, Any]]:
    """The soak's routes; ``revision`` changes a description only (a valid config that differs)."""
    light = decision("light", "light", 10, mode="lightweight", actions=["header", "body"])
    light["description"] = f"lightweight, revision {revision}"
    return [
        light,
        decision("standard", "standard", 20, mode="standard", actions=["header", "body"], max_iterations=2),
        # Detector "stalled past its budget": a budget no detector call can meet.
        decision("tiny_budget", "tiny", 30, mode="lightweight", actions=["header", "body"],
                  budgets={"detection_ms": 0.001, "total_ms": 2000}),
        decision("premium", "premium", 40, mode="premium", actions=["header", "body"],
                  verification_models=["verifier-a", "verifier-b"], judge_model="judge"),
    ]


MODELS = {
    name: {"timeout_s": 10, "max_retries": 0}
    for name in ("default", "primary", "verifier-a", "verifier-b", "judge")
}


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    route: str
    marker: str  # picks the upstream rule
    stream: bool
    weight: int
    allowed: tuple[str, ...] = ()  # contents an intact answer may carry (before a warning)
    expect: Literal["answer", "client_400", "upstream_500", "dropped", "gzip"] = "answer"
    raw_body: bytes | None = None  # sent as is instead of a chat request


KINDS: tuple[Kind, ...] = (
    Kind("light/plain/grounded", "light", "[grounded]", False, 6, (GROUNDED,)),
    Kind("light/plain/hallucinated", "light", "[hallucinated]", False, 6, (HALLUCINATED,)),
    Kind("light/stream/grounded", "light", "[grounded]", True, 5, (GROUNDED,)),
    Kind("light/stream/hallucinated", "light", "[hallucinated]", True, 5, (HALLUCINATED,)),
    Kind("standard/plain/hallucinated", "standard", "[hallucinated]", False, 3, (HALLUCINATED, REFINED)),
    Kind("standard/stream/hallucinated", "standard", "[hallucinated]", True, 3, (HALLUCINATED, REFINED)),
    Kind("tiny-budget/plain", "tiny", "[hallucinated]", False, 2, (HALLUCINATED,)),
    Kind("premium-verifiers-down/plain", "premium", "[grounded]", False, 2, (GROUNDED,)),
    Kind("bad/malformed-json", "light", "", False, 1, expect="client_400",
         raw_body=b'{"model": "soak", "messages": [{"role": "user", "content": "x"'),
    Kind("bad/gzip-upstream", "light", "[gzip]", False, 1, (GROUNDED,), expect="gzip"),
    Kind("bad/upstream-500", "light", "[upstream-500]", False, 1, expect="upstream_500"),
    Kind("fault/upstream-drops-mid-stream", "light", "[drop]", True, 1, (HALLUCINATED,), expect="dropped"),
)


def pick(rng: random.Random) -> Kind:
    return rng.choices(KINDS, weights=[k.weight for k in KINDS])[0]


def request_body(kind: Kind, seq: int) -> bytes:
    if kind.raw_body is not None:
        return kind.raw_body
    body: dict[str, Any] = {
        "model": "soak-model",
        "messages": [{"role": "user", "content": f"{kind.marker} Tell me about the Eiffel Tower. (#{seq})"}],
        "truthlens_context": PASSAGES,
    }
    if kind.stream:
        body["stream"] = True
    return json.dumps(body).encode()


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    reason: str  # why (the error reason, or what was wrong)
    checked: bool  # the processor stamped a verdict (x-truthlens-detected present)


def _content_ok(content: str, allowed: tuple[str, ...]) -> bool:
    """The content is an allowed answer, possibly with the route's warning around it."""
    for answer in allowed:
        if content == answer:
            return True
        for rest in (content.removesuffix(answer), content.removeprefix(answer)):
            if rest != content and "Warning" in rest and len(rest) < 400:
                return True
    return False


def _sse_content(body: bytes) -> tuple[str, bool, bool] | None:
    """Choice 0's content, whether ``[DONE]`` arrived and whether a verdict chunk (``choices: []``
    with a ``truthlens`` object) came; None when an event is not JSON."""
    parts: list[str] = []
    done = verdict = False
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        lines = [ln[5:].strip() for ln in block.split(b"\n") if ln.startswith(b"data:")]
        if not lines:
            continue
        payload = b"\n".join(lines)
        if payload == b"[DONE]":
            done = True
            continue
        try:
            event = json.loads(payload)
        except ValueError:
            return None
        if "error" in event:
            continue
        verdict = verdict or "truthlens" in event
        for choice in event.get("choices", []):
            if choice.get("index", 0) == 0:
                parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts), done, verdict


def _json_error(body: bytes) -> bool:
    try:
        return isinstance(json.loads(body).get("error"), dict)
    except (ValueError, AttributeError):
        return False


def classify(kind: Kind, status: int, headers: Mapping[str, str], body: bytes, complete: bool) -> Verdict:
    """Judge one response; ``complete`` is False when the connection ended before the body did."""
    checked = "x-truthlens-detected" in headers
    if kind.expect == "client_400":
        if status == 400 and _json_error(body):
            return Verdict("expected_error", "client_malformed_json", checked)
        return Verdict("corrupted", f"malformed request got {status}", checked)
    if kind.expect == "upstream_500":
        if status == 500 and _json_error(body):
            return Verdict("expected_error", "upstream_500", checked)
        return Verdict("corrupted", f"upstream 500 arrived as {status}", checked)
    if status != 200:
        return Verdict("corrupted", f"status {status}", checked)
    if kind.expect == "gzip" and headers.get("content-encoding") == "gzip":
        body = gzip.decompress(body)
    if kind.stream:
        parsed = _sse_content(body)
        if parsed is None:
            return Verdict("corrupted", "an SSE event is not JSON", checked)
        content, done, verdict = parsed
        checked = checked or verdict  # passthrough streams carry the verdict in a last chunk
        if kind.expect == "dropped":
            # The upstream cut the stream: what arrived must be a prefix of its answer.
            intact = any(a.startswith(content.split("\n\n")[-1]) for a in kind.allowed)
            if not intact:
                return Verdict("corrupted", "cut stream carries foreign content", checked)
            return Verdict("expected_error", "upstream_dropped_stream", checked)
        if not (done and complete):
            return Verdict("lost", "stream ended before [DONE]", checked)
    else:
        if not complete:
            return Verdict("lost", "body cut short", checked)
        try:
            content = json.loads(body)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            return Verdict("corrupted", "200 body is not a chat completion", checked)
    if not _content_ok(content, kind.allowed):
        return Verdict("corrupted", "content is neither the upstream's nor a legitimate rewrite", checked)
    return Verdict("ok", headers.get("x-truthlens-reason", "checked" if checked else "unchecked"), checked)
