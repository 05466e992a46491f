"""Path conditions' regexes in RE2: the engine the processor matches them with
(:func:`compile_path_regex`), and each one rebuilt as the RE2 regex (what Envoy's ``safe_regex``
reads) that an Envoy route matches a request's raw path with (:func:`path_regex`), or a
ValueError naming the construct for which no such regex is exact.

RE2 runs in time linear in the path whatever the pattern: a nested quantifier such as
``^/v1/(a+)+$``, which Python's backtracking ``re`` takes seconds (doubling per character) to fail
on ``/v1/aaaa…a!``, costs RE2 microseconds, so no path rule can stall a worker's event loop.
A pattern must be valid RE2 (no back-references, no look-arounds) and read by Python's ``re``
parser too (the letter check and :func:`path_regex` walk its parse).

The processor searches the pattern in the path as :func:`truthlens.gateway.core.paths.normal_path`
reads it (no ``;params``, lower case, no trailing slash); Envoy matches the whole raw path (less
its query string). So the regex is rebuilt from the parsed pattern, not copied as text, with the
rule folded in: a letter matches either case, a ``/`` may follow a segment's ``;params``, ``$``
may follow a dropped tail, and the text before the match never ends inside ``;params``. No
spelling that the engines read differently (``{,3}``, ``\\Z``, ``\\u0041``) passes through.

Kept: literals, classes of literals and ranges, groups (as non-capturing), alternation, greedy
and lazy repeats up to RE2's 1000, ``^``/``\\A`` and ``$``. Refused: ``.``, negated classes and a
class holding ``/`` or ``;`` (they could match inside ``;params`` or a dropped slash), a ``/``
that is not followed by a character the path keeps (it could be a dropped trailing slash),
``\\d``/``\\w``/``\\s`` and ``\\b`` (Unicode in Python, ASCII in RE2), look-arounds,
back-references, inline flags, upper-case letters (the path compared is lower case), non-ASCII.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import re2

from truthlens.gateway.core.paths import DROPPED_TAIL_RE2, KEPT_AFTER_SLASH_RE2, KEPT_PREFIX_RE2, PARAMS_RE2

_MAX_RE2_REPEAT = 1000
_PARSER: Any = getattr(re, "_parser")  # noqa: B009 - the stdlib's own parser, no public name
_C: Any = getattr(re, "_constants")  # noqa: B009
_SLASH = ord("/")
_SEMICOLON = ord(";")


class PathPattern(Protocol):
    """A compiled path regex, as the decision rules use it."""

    def search(self, text: bytes) -> object | None: ...


def compile_path_regex(pattern: str) -> PathPattern:
    """``pattern`` compiled by RE2 (searched, like ``re.search``, in a path's bytes); ValueError
    with RE2's reason for a pattern it refuses."""
    options = re2.Options()
    options.log_errors = False  # the reason goes into the ValueError, not onto stderr
    try:
        compiled: PathPattern = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        raise ValueError(reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)) from None
    return compiled


def path_regex(pattern: str) -> str:
    """The RE2 regex whose full match on a raw path (without its query string) holds exactly
    when ``re.search(pattern, normal_path(path))`` does; ValueError naming the construct
    otherwise."""
    if not pattern.isascii():
        raise ValueError("non-ASCII characters")
    parsed = _PARSER.parse(pattern, 0)
    if parsed.state.flags & ~int(re.UNICODE):
        raise ValueError("inline flags")
    if parsed and parsed[-1] == (_C.LITERAL, _SLASH) and parsed[:-1].getwidth()[0] == 0:
        raise ValueError("a '/' that may be the whole match (the root path '/' keeps its slash)")
    return f"{KEPT_PREFIX_RE2}(?:{_sequence(list(parsed), top=True)}).*"


def has_upper_case_literal(pattern: str) -> bool:
    """Whether ``pattern`` (a valid Python ``re``) holds an upper-case ASCII letter as a literal
    (it never matches a lower-cased path)."""
    def walk(items: Any) -> bool:
        for op, av in items:
            if op is _C.LITERAL and 0x41 <= av <= 0x5A:
                return True
            if op is _C.SUBPATTERN and walk(av[3]):
                return True
            if op is _C.BRANCH and any(walk(b) for b in av[1]):
                return True
            if (op is _C.MAX_REPEAT or op is _C.MIN_REPEAT) and walk(av[2]):
                return True
        return False

    return walk(_PARSER.parse(pattern, 0))


def _sequence(items: list[Any], *, top: bool = False) -> str:
    out = []
    for i, (op, av) in enumerate(items):
        if op is _C.LITERAL and av == _SLASH:
            out.append(f"(?:{PARAMS_RE2})?/")
            if i + 1 < len(items) and _starts_with_kept(items[i + 1]):
                continue
            if top and i + 1 == len(items):
                out.append(KEPT_AFTER_SLASH_RE2)  # the slash is kept only when some character follows
                continue
            raise ValueError("a '/' not followed by a letter or class (it could be a dropped trailing slash)")
        out.append(_one(op, av))
    return "".join(out)


def _starts_with_kept(item: Any) -> bool:
    """Whether every match of ``item`` starts with a character the path keeps (not '/')."""
    op, av = item
    if op is _C.LITERAL:
        return bool(av != _SLASH)
    if op is _C.IN:
        return True  # classes hold neither '/' nor ';' (see _class)
    if op is _C.SUBPATTERN:
        return bool(av[3]) and _starts_with_kept(av[3][0])
    if op is _C.BRANCH:
        return all(bool(b) and _starts_with_kept(b[0]) for b in av[1])
    if op is _C.MAX_REPEAT or op is _C.MIN_REPEAT:
        return bool(av[0] >= 1 and av[2] and _starts_with_kept(av[2][0]))
    return False


def _literal(code: int) -> str:
    ch = chr(code)
    if (ch.isalnum() and ch.isascii()) or ch in "/_":
        return ch
    if 0x20 < code < 0x7F:
        return "\\" + ch  # RE2 reads a backslash before punctuation as the literal character
    return f"\\x{code:02x}"


def _letter(code: int) -> str:
    ch = chr(code)
    if "a" <= ch <= "z":
        return f"[{ch}{ch.upper()}]"
    if "A" <= ch <= "Z":
        raise ValueError(f"the upper-case letter {ch!r} (the path compared is lower case)")
    if code == _SEMICOLON:
        raise ValueError("a ';' (the path compared has no ;params)")
    return _literal(code)


def _class(av: Any) -> str:
    if av and av[0][0] is _C.NEGATE:
        raise ValueError("a negated class (it could match inside ;params or a dropped slash)")
    chars: set[int] = set()
    for mop, mav in av:
        if mop is _C.LITERAL:
            chars.add(mav)
        elif mop is _C.RANGE:
            chars.update(range(mav[0], mav[1] + 1))
        else:
            raise ValueError(f"a character class with {mop} (\\d, \\w and \\s differ outside ASCII)")
    if _SLASH in chars or _SEMICOLON in chars:
        raise ValueError("a class holding '/' or ';' (it could match inside ;params or a dropped slash)")
    if any(c > 0x7F for c in chars):
        raise ValueError("non-ASCII characters")
    kept = {c for c in chars if not 0x41 <= c <= 0x5A}  # the path compared holds no upper case
    if not kept:
        raise ValueError("a class of upper-case letters only (the path compared is lower case)")
    kept |= {c - 0x20 for c in kept if 0x61 <= c <= 0x7A}  # raw letters of either case
    return "[" + "".join(_literal(c) for c in sorted(kept)) + "]"


def _one(op: Any, av: Any) -> str:
    if op is _C.LITERAL:
        return _letter(av)
    if op is _C.IN:
        return _class(av)
    if op is _C.NOT_LITERAL or op is _C.ANY:
        raise ValueError("'.' or a negated class (it could match inside ;params or a dropped slash)")
    if op is _C.BRANCH:
        return "(?:" + "|".join(_sequence(list(b)) for b in av[1]) + ")"
    if op is _C.SUBPATTERN:
        _group, add_flags, del_flags, sub = av
        if add_flags or del_flags:
            raise ValueError("inline flags")
        return f"(?:{_sequence(list(sub))})"
    if op is _C.MAX_REPEAT or op is _C.MIN_REPEAT:
        lo, hi, sub = av
        if lo > _MAX_RE2_REPEAT or (hi is not _C.MAXREPEAT and hi > _MAX_RE2_REPEAT):
            raise ValueError(f"a repeat over {_MAX_RE2_REPEAT} (RE2's limit)")
        upper = "" if hi is _C.MAXREPEAT else str(hi)
        quantifier = f"{{{lo},{upper}}}" if lo != hi else f"{{{lo}}}"
        return f"(?:{_sequence(list(sub))}){quantifier}{'?' if op is _C.MIN_REPEAT else ''}"
    if op is _C.AT:
        if av is _C.AT_BEGINNING or av is _C.AT_BEGINNING_STRING:
            return "^"
        if av is _C.AT_END:
            return f"{DROPPED_TAIL_RE2}$"  # Python's $ also matches before a final newline; a path has none
        raise ValueError(f"the anchor {av} (\\b, \\B and \\Z differ in RE2)")
    raise ValueError(f"the construct {op} (no RE2 equivalent with the same meaning)")
