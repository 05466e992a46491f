"""A route's actions and streaming: how its verdict reaches the client (``actions``: headers,
a warning in the body, block; ``streaming``: passthrough, hold or progressive, ``auto`` resolved
from what the mode and the actions allow)."""

from __future__ import annotations

from typing import Literal

from truthlens.options import ConfigError, Section

ACTIONS = ("header", "body", "block")
Action = Literal["header", "body", "block"]
StreamingMode = Literal["passthrough", "hold", "progressive"]


def resolve_streaming(s: Section, mode: str, rewrites: bool, actions: frozenset[Action]) -> StreamingMode:
    """``streaming: auto`` streams through only when nothing can change the answer after its
    first bytes went out: a mode that rewrites answers, or the block action, must hold it."""
    requested: Literal["auto", StreamingMode] = s.choice(
        "streaming", "auto", ("auto", "passthrough", "hold", "progressive"))
    must_hold = rewrites or "block" in actions
    if requested == "auto":
        return "hold" if must_hold else "passthrough"
    if requested == "passthrough" and must_hold:
        why = f"mode {mode!r} rewrites answers" if rewrites else "the block action withholds answers"
        raise ConfigError(s.key("streaming"), f"passthrough cannot be used here: {why}; use hold or auto")
    if requested == "progressive" and rewrites:
        # Releasing a rewriting mode's answer sentence by sentence needs a continuation re-asked
        # from the released prefix; not built yet.
        raise ConfigError(s.key("streaming"), f"progressive cannot be used with mode {mode!r} yet (it rewrites "
                                              "answers); use hold")
    return requested


def parse_actions(s: Section) -> frozenset[Action]:
    value = s.get("actions", ["header", "body"], schema={"type": "array", "items": {"enum": list(ACTIONS)},
                                                         "uniqueItems": True, "default": ["header", "body"]})
    key = s.key("actions")
    if not isinstance(value, list):
        raise ConfigError(key, f"must be a list of {', '.join(ACTIONS)} (or [])")
    for i, a in enumerate(value):
        if a not in ACTIONS:
            raise ConfigError(f"{key}[{i}]", f"unknown action {a!r} (expected one of {', '.join(ACTIONS)})")
    if len(set(value)) != len(value):
        raise ConfigError(key, "lists an action twice")
    return frozenset(value)
