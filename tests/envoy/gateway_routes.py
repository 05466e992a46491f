"""Routes and upstream script of the gateway's end-to-end tests (answers from ``tests/shipped_inputs.py``)."""

from __future__ import annotations

from harness import decision
from shipped_inputs import CONTEXT as PASSAGE
from shipped_inputs import GROUNDED, HALLUCINATED, WRONG_FACTS

CONTEXT = [PASSAGE]

__all__ = ["CONTEXT", "DECISIONS", "GROUNDED", "HALLUCINATED", "SCRIPT", "WRONG_FACTS"]

DECISIONS = [
    decision("header_only", route_header="header", actions=["header"]),
    decision("block", route_header="block", actions=["header", "block"]),
    decision("hold", route_header="hold", streaming="hold", actions=["header", "body"]),
    decision("none", route_header="none", actions=[]),
    decision("closed", route_header="closed", fail_policy="closed", actions=["header", "body"]),
    decision("slow", route_header="slow", budgets={"detection_ms": 0.001, "total_ms": 2000}),
    decision("small", route_header="small", max_body_bytes=64),
    decision("off", route_header="off", enabled=False),
    decision("chat", priority=10, actions=["header", "body"], streaming="passthrough"),
]

# The scripted upstream's answers, picked by a word of the question.
SCRIPT = [
    {"name": "grounded", "match": {"user": "grounded"}, "reply": {"content": GROUNDED}},
    {"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}},
    {"name": "server_error", "match": {"user": "upstream-500"}, "reply": {"status": 500}},
    {"name": "bad_json", "match": {"user": "bad-json"},
     "reply": {"raw_body": '{"id": "x", "choices": [{"index": 0, "message": {"content": "Ber', "content_type": "application/json"}},
    {"name": "gzip", "match": {"user": "gzip"}, "reply": {"content": HALLUCINATED, "content_encoding": "gzip"}},
    {"name": "html", "match": {"user": "html"}, "reply": {"raw_body": "<html>Berlin</html>", "content_type": "text/html"}},
    {"name": "broken_sse", "match": {"user": "broken-sse"}, "reply": {"content": HALLUCINATED, "break_sse": True}},
    {"name": "slow", "match": {"user": "slow-upstream"}, "reply": {"content": HALLUCINATED, "delay_s": 1.5}},
]

