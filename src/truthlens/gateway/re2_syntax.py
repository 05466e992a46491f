"""A Python ``re`` pattern rebuilt in RE2 syntax (what Envoy's ``safe_regex`` reads), or a
ValueError naming the construct whose meaning could differ between the two engines.

Rebuilt from the parsed pattern, not copied as text, so no spelling that the engines read
differently (``{,3}``, ``\\Z``, ``\\u0041``) passes through. Kept: literals, classes of literals and
ranges, ``.``, groups (as non-capturing), alternation, greedy and lazy repeats up to RE2's 1000,
``^``/``\\A`` and ``$``. Refused: ``\\d``/``\\w``/``\\s`` and ``\\b`` (Unicode in Python, ASCII in RE2),
look-arounds, back-references, inline flags, non-ASCII text. The result matches the same strings
as the pattern (a path holds no newline, where Python's ``$`` differs).
"""

from __future__ import annotations

import re
from typing import Any

_MAX_RE2_REPEAT = 1000


def to_re2(pattern: str) -> str:
    """``pattern`` (Python ``re``) rebuilt in RE2 syntax, or ValueError naming the construct
    whose meaning could differ between the engines."""
    if not pattern.isascii():
        raise ValueError("non-ASCII characters")
    parser: Any = getattr(re, "_parser")  # noqa: B009 - the stdlib's own parser, no public name
    constants: Any = getattr(re, "_constants")  # noqa: B009
    parsed = parser.parse(pattern, 0)
    if parsed.state.flags & ~int(re.UNICODE):
        raise ValueError("inline flags")
    return _emit(parsed, constants)


def _emit(items: Any, c: Any) -> str:
    return "".join(_emit_one(op, av, c) for op, av in items)


def _literal(code: int) -> str:
    ch = chr(code)
    if (ch.isalnum() and ch.isascii()) or ch in "/_":
        return ch
    if 0x20 < code < 0x7F:
        return "\\" + ch  # RE2 reads a backslash before punctuation as the literal character
    return f"\\x{code:02x}"


def _emit_one(op: Any, av: Any, c: Any) -> str:
    if op is c.LITERAL:
        return _literal(av)
    if op is c.NOT_LITERAL:
        return f"[^{_literal(av)}]"
    if op is c.ANY:
        return "."
    if op is c.IN:
        negate = bool(av) and av[0][0] is c.NEGATE
        members = []
        for mop, mav in av[1:] if negate else av:
            if mop is c.LITERAL:
                members.append(_literal(mav))
            elif mop is c.RANGE:
                members.append(f"{_literal(mav[0])}-{_literal(mav[1])}")
            else:
                raise ValueError(f"a character class with {mop} (\\d, \\w and \\s differ outside ASCII)")
        return f"[{'^' if negate else ''}{''.join(members)}]"
    if op is c.BRANCH:
        return "(?:" + "|".join(_emit(b, c) for b in av[1]) + ")"
    if op is c.SUBPATTERN:
        _group, add_flags, del_flags, sub = av
        if add_flags or del_flags:
            raise ValueError("inline flags")
        return f"(?:{_emit(sub, c)})"
    if op is c.MAX_REPEAT or op is c.MIN_REPEAT:
        lo, hi, sub = av
        if lo > _MAX_RE2_REPEAT or (hi is not c.MAXREPEAT and hi > _MAX_RE2_REPEAT):
            raise ValueError(f"a repeat over {_MAX_RE2_REPEAT} (RE2's limit)")
        upper = "" if hi is c.MAXREPEAT else str(hi)
        quantifier = f"{{{lo},{upper}}}" if lo != hi else f"{{{lo}}}"
        return f"(?:{_emit(sub, c)}){quantifier}{'?' if op is c.MIN_REPEAT else ''}"
    if op is c.AT:
        if av is c.AT_BEGINNING or av is c.AT_BEGINNING_STRING:
            return "^"
        if av is c.AT_END:
            return "$"  # Python's $ also matches before a final newline; a path has none
        raise ValueError(f"the anchor {av} (\\b, \\B and \\Z differ in RE2)")
    raise ValueError(f"the construct {op} (no RE2 equivalent with the same meaning)")
