"""The one way the gateway reads and edits JSON it did not write: depth-bounded decoding, the test
whether a text may name a key (escapes included), and removing a key wherever it sits.

An upstream (or a client) controls the bytes, so nothing here may reach an interpreter limit:
``json.loads`` and ``json.dumps`` recurse once per nesting level, and a value nested a few
thousand deep raised ``RecursionError`` from wherever it was parsed. :func:`loads` refuses a
document nested deeper than :data:`MAX_DEPTH` before the parser sees it; every walk here is
iterative, and :func:`without_top_level_key` cuts a key out of a document of any depth with a
linear token scan, so a document too deep to decode still loses a field the gateway must remove.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import numpy as np

# OpenAI bodies nest about 8 deep (a Responses annotation); JSON schemas in requests a few dozen.
MAX_DEPTH = 128

_NOT_NESTING = bytes(c for c in range(256) if c not in b'[]{}"')  # what depth does not depend on
_STRING = re.compile(rb'"[^"]*"')  # a string once only its quotes and brackets are left
_STEPS = np.zeros(256, dtype=np.int32)
_STEPS[list(b"[{")] = 1
_STEPS[list(b"]}")] = -1
_ASCII_ESCAPE = re.compile(r"\\u00([0-7][0-9a-fA-F])")


class JSONError(ValueError):
    """Not JSON the gateway will read: invalid, or nested deeper than :data:`MAX_DEPTH`."""


class TooDeep(JSONError):
    """Nested deeper than :data:`MAX_DEPTH` (it may be valid JSON that another reader accepts)."""


def loads(data: str | bytes) -> Any:
    """``data`` decoded, never nested deeper than :data:`MAX_DEPTH`; :class:`JSONError` otherwise."""
    if not within_depth(data):
        raise TooDeep(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # RecursionError: a caller already deep in its stack
        raise JSONError(str(exc)) from None


# One encoder for every call (``json.dumps`` with options builds a new one each time).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept (every value the gateway writes went through :func:`loads`)."""
    return _ENCODER.encode(value)


def within_depth(text: str | bytes) -> bool:
    """Whether no value of ``text`` nests deeper than :data:`MAX_DEPTH`. Cheap for the usual
    event: fewer brackets than the limit cannot nest past it (two C-speed counts). Otherwise
    every byte but the brackets outside strings is dropped (C-speed byte operations) and the
    running depth is a cumulative sum: linear in the bytes, whatever the nesting."""
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= MAX_DEPTH:
            return True
        raw = text.encode("utf-8", "surrogatepass")
    elif text.count(b"[") + text.count(b"{") <= MAX_DEPTH:
        return True
    else:
        raw = bytes(text)
    # Escaped backslashes first, then escaped quotes: what is left of a string is its brackets
    # between two quotes, and those go with the string.
    raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_NESTING)
    raw = _STRING.sub(b"", raw.replace(b'""', b""))  # most strings hold no bracket: gone in C first
    steps = _STEPS[np.frombuffer(raw, dtype=np.uint8)]
    return steps.size == 0 or int(np.cumsum(steps).max()) <= MAX_DEPTH


def mentions(text: str | bytes, name: str) -> bool:
    """Whether ``text`` may hold the string ``name`` once JSON-decoded: spelt out, or with ASCII
    ``\\u00XX`` escapes (``"truthl\\u0065ns"`` is ``truthlens`` to every JSON reader). Sound for
    an ASCII ``name``: a false answer means no decoding of ``text`` contains it. Text with no
    escape of one of ``name``'s letters is settled by two substring searches."""
    if isinstance(text, bytes | bytearray):
        if name.encode() in text:
            return True
        if b"\\u00" not in text:
            return False
        text = bytes(text).decode("utf-8", "replace")
    elif name in text:
        return True
    elif "\\u00" not in text:
        return False
    if not _letter_escapes(name).search(text):
        return False
    return name in _ASCII_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


@functools.cache
def _letter_escapes(name: str) -> re.Pattern[str]:
    """A ``\\u00XX`` escape of one of ``name``'s characters (hex digits in either case)."""
    def either_case(hexa: str) -> str:
        return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in hexa)

    return re.compile(r"\\u00(?:" + "|".join(either_case(f"{ord(c):02x}") for c in sorted(set(name))) + ")")


def without_member(body: bytes, name: str) -> bytes | None:
    """``body`` (a JSON object) without its top-level member ``name`` (every one, escaped keys
    included), or None when it has none or is not an object; :class:`JSONError` when it
    mentions ``name`` but is not JSON. A document too deep to decode loses the member all the
    same (:func:`without_key_text`); :class:`TooDeep` when its structure cannot be followed."""
    if not mentions(body, name):
        return None
    try:
        doc = loads(body)
    except TooDeep:
        cut = without_key_text(body.decode("utf-8", "surrogatepass"), name, anywhere=False)
        return cut.encode("utf-8", "surrogatepass") if cut is not None else None
    except UnicodeDecodeError as exc:
        raise JSONError(str(exc)) from None
    if not isinstance(doc, dict) or name not in doc:
        return None
    del doc[name]
    return dumps(doc).encode("utf-8")


def has_key(value: Any, name: str) -> bool:
    """Whether an object anywhere in ``value`` has the key ``name`` (iterative)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if name in item:
                return True
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))
    return False


def without_key(value: Any, name: str) -> Any:
    """``value`` with the key ``name`` removed from every object, at any depth; only the objects
    and lists on the way to one are copied (``value`` itself when there is none)."""
    if not has_key(value, name):
        return value
    return _without(value, name)


def _without(value: Any, name: str) -> Any:
    # Recursion is bounded: every document here came through loads() (at most MAX_DEPTH deep).
    if isinstance(value, dict):
        return {k: _without(v, name) if isinstance(v, dict | list) else v for k, v in value.items() if k != name}
    if isinstance(value, list):
        return [_without(v, name) if isinstance(v, dict | list) else v for v in value]
    return value


_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]|[^\s\[\]{},:"]+', re.DOTALL)


def without_key_text(text: str, name: str, *, anywhere: bool = True) -> str | None:
    """``text`` (a JSON object or array of any depth) without each member named ``name`` (at
    any depth, or only at the top level), by a linear token scan that never recurses; None when
    there is no such member; :class:`JSONError` when the structure cannot be followed (not a
    container, brackets that do not match). For documents :func:`loads` refuses as too deep,
    which other readers still parse."""
    cuts: list[tuple[int, int]] = []
    # The open containers, one entry each in parallel lists of plain values (objects per level
    # would make the garbage collector walk them all, again and again, on a deep document).
    is_object: list[bool] = []
    expect_key: list[bool] = []
    member_start: list[int] = []
    cutting: list[bool] = []
    comma: list[int] = []  # the last comma kept before the current member; -1: none
    cut_depth = 0  # > 0: inside the value of a member being cut at that depth
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in ("{", "["):
            obj = tok == "{"
            is_object.append(obj)
            expect_key.append(obj)
            member_start.append(0)
            cutting.append(False)
            comma.append(-1)
            continue
        depth = len(is_object)
        if not depth:
            raise JSONError("not a JSON object or array")
        if tok in ("}", "]"):
            if is_object[-1] != (tok == "}"):
                raise JSONError(f"unmatched {tok!r} at {m.start()}")
            if cutting[-1]:  # the last member goes with the comma before it
                cuts.append((comma[-1] if comma[-1] >= 0 else member_start[-1], m.start()))
                cut_depth = 0
            is_object.pop()
            expect_key.pop()
            member_start.pop()
            cutting.pop()
            comma.pop()
            if depth == 1:
                break
            continue
        if cut_depth and depth > cut_depth:
            continue  # inside a value being cut
        if tok == ",":
            if cutting[-1]:
                # The member and its comma; ``comma`` stays the one before it, so that a cut
                # last member takes that one (the cuts then overlap and merge).
                cuts.append((member_start[-1], m.end()))
                cutting[-1], cut_depth = False, 0
            else:
                comma[-1] = m.start()
            expect_key[-1] = is_object[-1]
        elif expect_key[-1]:
            expect_key[-1] = False
            member_start[-1] = m.start()
            if tok.startswith('"') and (anywhere or depth == 1) and _decoded(tok) == name:
                cutting[-1], cut_depth = True, depth
    else:
        raise JSONError("a bracket is never closed")
    if not cuts:
        return None
    out: list[str] = []
    pos = 0
    for start, end in sorted(cuts):
        out.append(text[pos:max(pos, start)])
        pos = max(pos, end)
    return "".join(out) + text[pos:]


def _decoded(token: str) -> str | None:
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None
