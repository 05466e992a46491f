"""The one rule by which a request path is read: what the processor's path conditions and its
choice of API (chat or Responses) compare, and what the routes of ``truthlens envoy-routes``
reproduce in Envoy, so both sides decide every spelling of a path alike.

Upstreams differ in how loosely they route: many compare paths case-insensitively, ignore a
trailing slash, or drop ``;params`` from a path segment (servlet containers, some proxies). A
check that compared paths more strictly than its upstream could be skipped by spelling a path
as ``/V1/chat/completions``, ``/v1/responses/`` or ``/v1/responses;x``. So the path is read as:

1. the query string and fragment cut off (from the first ``?`` or ``#``);
2. each segment's ``;params`` dropped (from a ``;`` to the segment's end);
3. ASCII letters lower-cased (other characters as they are);
4. trailing slashes dropped (the root stays ``/``).

Envoy itself (the shipped ``envoy.yaml``) already decodes percent-encoded unreserved characters,
resolves dot segments and merges repeated slashes before the processor or a route sees the path.
"""

from __future__ import annotations

import functools
import re

_CUT = re.compile(r"[?#]")
_PARAMS = re.compile(r";[^/]*")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

# Raw-path pieces of the Envoy regexes (RE2) that reproduce :func:`normal_path`:
# a segment's optional ;params (they run to the next slash),
PARAMS_RE2 = ";[^/]*"
# a path's tail that the rule drops (the last segment's params, then slashes and empty
# segments' params), before its end,
DROPPED_TAIL_RE2 = f"(?:{PARAMS_RE2})?(?:/(?:{PARAMS_RE2})?)*"
# any text before a match that ends where a kept character could start (not inside params),
KEPT_PREFIX_RE2 = f"(?:[^;]|{PARAMS_RE2}/)*"
# and after a slash, a character the rule keeps somewhere later (the slash is then kept too).
KEPT_AFTER_SLASH_RE2 = f"(?:/|{PARAMS_RE2}/)*[^/;]"


def lower_ascii(text: str) -> str:
    """``text`` with its ASCII letters lower-cased (Unicode case rules differ between engines)."""
    return text.translate(_ASCII_LOWER)


def normal_path(path: str) -> str:
    """``path`` as path conditions and API selection read it (see the module's rule)."""
    # Every exchange reads its path several times (the API, each path condition), and a gateway
    # sees few distinct paths: the usual ones come from a bounded cache (long ones, which a
    # client could vary to fill it, are computed each time).
    return _cached_normal_path(path) if len(path) <= _CACHED_PATH_LEN else _normal_path(path)


_CACHED_PATH_LEN = 256


def _normal_path(path: str) -> str:
    path = _CUT.split(path, 1)[0]
    path = lower_ascii(_PARAMS.sub("", path)).rstrip("/")
    return path or "/"


_cached_normal_path = functools.lru_cache(maxsize=1024)(_normal_path)


def normal_prefix(prefix: str) -> str:
    """A ``prefix`` path condition's operand, spelt as the paths it is compared with (lower case,
    no ``;params``); a trailing slash stays: ``/v1/`` holds for paths under ``/v1/``, not ``/v1``."""
    return lower_ascii(_PARAMS.sub("", prefix))
