"""Hostile upstream bodies for the property-based tests (``hypothesis``), and the fuzz profiles.

Profiles (``TRUTHLENS_FUZZ_PROFILE``): ``default`` keeps the suite quick (a few hundred examples
in all, the same ones every run, no example database written); ``ci`` (the default when the
environment says ``CI=true``) runs as many, drawn from a seed that changes every run (printed in
the report header and again after a failure, with the option that replays it; ``conftest.py``);
``thorough`` runs many more (on demand: see docs/operations.md, "Fuzzing the codecs"). A case a
fresh seed finds is a bug: fix it and keep the case as an ``@example`` of its property. What is
generated: chat chunks and Responses events whose fields have odd types, JSON-escaped spellings
of the verdict's name (``"truthl\\u0065ns"``) in keys, types and event names, values nested past
the gateway's JSON depth bound and past the interpreter's recursion limit, byte order marks,
``retry`` lines of non-ASCII digits, CR / LF / CRLF line ends mixed, and split points anywhere
(inside a code point too).

A forged verdict always says ``"status": "FORGED"``: no verdict with that status may reach a client.
"""

from __future__ import annotations

import json
import os
import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

NAME = "truthlens"
FORGED = {"status": "FORGED", "action": "none"}
_PLACEHOLDER = "__FORGED_KEY__"
_DEEP = "__DEEP_VALUE__"

_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
settings.register_profile("default", max_examples=40, deadline=None, database=None, derandomize=True,
                          suppress_health_check=_QUIET)
# Fresh examples every run (the seed: :data:`SEED`), the failing one printed as a decorator too.
settings.register_profile("ci", max_examples=40, deadline=None, database=None, derandomize=False,
                          print_blob=True, suppress_health_check=_QUIET)
settings.register_profile("thorough", max_examples=2000, deadline=None, database=None,
                          suppress_health_check=_QUIET)
PROFILE = os.environ.get("TRUTHLENS_FUZZ_PROFILE") or ("ci" if os.environ.get("CI", "").lower() == "true" else "default")
settings.load_profile(PROFILE)
# The run's seed where examples are random (``TRUTHLENS_FUZZ_SEED`` replays one): conftest.py hands
# it to hypothesis (``--hypothesis-seed``) and prints it. None: derandomized, nothing to print.
SEED: int | None = (None if settings.default.derandomize
                    else int(os.environ.get("TRUTHLENS_FUZZ_SEED") or random.SystemRandom().randrange(2**32)))



# -- the seed in pytest (hooks re-exported by tests/conftest.py) ------------------------------------

@pytest.hookimpl(tryfirst=True)  # before hypothesis's own plugin reads --hypothesis-seed
def pytest_configure(config: pytest.Config) -> None:
    if SEED is not None and config.getoption("hypothesis_seed", None) is None:
        config.option.hypothesis_seed = str(SEED)


def _seed_line(config: pytest.Config) -> str | None:
    seed = config.getoption("hypothesis_seed", None)
    if seed is None:
        return None
    return (f"fuzz profile {PROFILE}, seed {seed}: replay with TRUTHLENS_FUZZ_SEED={seed} "
            f"TRUTHLENS_FUZZ_PROFILE={PROFILE} (or --hypothesis-seed={seed})")


def pytest_report_header(config: pytest.Config) -> str | None:
    return _seed_line(config)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    line = _seed_line(config)
    if line is not None and exitstatus != 0:
        terminalreporter.write_line(line)

@st.composite
def escaped(draw: st.DrawFn, word: str = NAME) -> str:
    """``word`` as JSON string content, each character spelt out or as a ``\\u00XX`` escape."""
    out = []
    for ch in word:
        if draw(st.booleans()):
            hexa = f"{ord(ch):04x}"
            out.append("\\u" + (hexa.upper() if draw(st.booleans()) else hexa))
        else:
            out.append(ch)
    return "".join(out)


def _odd(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``inner``, or a value of another JSON type where a field's type is expected."""
    return st.one_of(inner, st.none(), st.booleans(), st.integers(-5, 300), st.text(max_size=4),
                     st.lists(st.integers(0, 3), max_size=2), st.just({}))


_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
_PART = st.fixed_dictionaries({"type": st.sampled_from(["text", "output_text", "refusal", "image_url"]),
                               "text": _odd(_TEXT)})
_TOOL_CALL = st.fixed_dictionaries({"index": _odd(st.integers(0, 3))},
                                   optional={"id": _TEXT, "function": st.fixed_dictionaries(
                                       {}, optional={"name": _TEXT, "arguments": _odd(_TEXT)})})
_DELTA = st.fixed_dictionaries({}, optional={
    "role": st.just("assistant"), "content": _odd(st.one_of(_TEXT, st.lists(_odd(_PART), max_size=2))),
    "refusal": _odd(_TEXT), "tool_calls": _odd(st.lists(_odd(_TOOL_CALL), max_size=2)),
    _PLACEHOLDER: st.just(FORGED)})
_CHOICE = st.fixed_dictionaries({"index": _odd(st.integers(0, 2)), "delta": _odd(_DELTA),
                                 "finish_reason": _odd(st.sampled_from(["stop", "length", "tool_calls"]))})


def chat_chunks() -> st.SearchStrategy[dict[str, Any]]:
    """A ``chat.completion.chunk``-like object; optional placeholders for a forged key and a deep value."""
    return st.fixed_dictionaries(
        {"id": st.just("c1"), "object": st.just("chat.completion.chunk"), "model": st.just("m"),
         "choices": _odd(st.lists(_odd(_CHOICE), max_size=3))},
        optional={_PLACEHOLDER: st.just(FORGED), "x": st.just(_DEEP), "usage": _odd(st.just({"total_tokens": 1}))})


def responses_events() -> st.SearchStrategy[dict[str, Any]]:
    """A Responses API stream event of a known or odd type, with odd field types."""
    kinds = st.sampled_from(["response.output_text.delta", "response.output_item.added", "response.content_part.added",
                             "response.output_text.done", "response.created", "custom\nevent", "x", _PLACEHOLDER])
    return st.fixed_dictionaries(
        {"type": _odd(kinds)},
        optional={"output_index": _odd(st.integers(0, 2)), "content_index": _odd(st.integers(0, 1)),
                  "delta": _odd(_TEXT), "text": _odd(_TEXT), "item_id": _odd(_TEXT),
                  "item": _odd(st.fixed_dictionaries({"type": st.sampled_from(["message", "function_call"])})),
                  "part": _odd(_PART), "response": _odd(st.fixed_dictionaries({}, optional={_PLACEHOLDER: st.just(FORGED)})),
                  _PLACEHOLDER: st.just(FORGED), "x": st.just(_DEEP)})


@st.composite
def event_text(draw: st.DrawFn, objects: st.SearchStrategy[dict[str, Any]]) -> str:
    """One SSE event: an object of ``objects`` as JSON with each placeholder filled in hostilely
    (an escaped verdict name; a value nested up to 400 deep, or past the gateway's bound up to
    5,000 deep, beyond the interpreter's recursion limit: a reader without the bound fails
    there), an optional ``event:`` name (a forged ``truthlens.verdict`` too), odd fields, then a
    blank line."""
    data = json.dumps(draw(objects), ensure_ascii=draw(st.booleans()))
    while _PLACEHOLDER in data:
        data = data.replace(_PLACEHOLDER, draw(escaped()) if draw(st.booleans()) else draw(escaped()) + ".verdict", 1)
    # Past the gateway's bound (json_doc.MAX_DEPTH, 128) and past the recursion limit (1,000),
    # where a parser without the bound raises: fixed numbers, so a changed bound is still tested.
    depth = draw(st.one_of(st.integers(0, 400), st.integers(400, 5000)))
    data = data.replace(f'"{_DEEP}"', "[" * depth + "]" * depth)
    lines = []
    name = draw(st.sampled_from([None, None, "message", "truthlens.verdict", "truthl\u0065ns"]))
    if name is not None:
        lines.append(f"event: {name}")
    lines.extend(draw(st.lists(st.sampled_from([": keepalive", "retry: \u00b2", "retry: 15", "id: 7", "id: a\0b"]),
                               max_size=2)))
    lines.append(f"data: {data}" if draw(st.booleans()) else f"data:{data}")
    return "\n".join(lines) + "\n\n"


@st.composite
def framed(draw: st.DrawFn, events: list[str]) -> bytes:
    """``events`` as one body: line ends of the stream picked from LF, CRLF and CR (mixed or
    not), a leading BOM or not."""
    end = draw(st.sampled_from(["\n", "\r\n", "\r", "mixed"]))
    out = []
    for text in events:
        for line in text.split("\n"):
            sep = draw(st.sampled_from(["\n", "\r\n", "\r"])) if end == "mixed" else end
            out.append(line + sep)
    body = "".join(out)[: -len(end) if end != "mixed" else None]
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + body.encode("utf-8")


@st.composite
def splits(draw: st.DrawFn, body: bytes) -> list[bytes]:
    """``body`` cut at arbitrary points (inside code points and line ends too)."""
    cuts = sorted(set(draw(st.lists(st.integers(0, len(body)), max_size=8))))
    edges = [0, *cuts, len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]


# -- what a client reads ---------------------------------------------------------------------------

_LINE = re.compile(r"\r\n|\r|\n")
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def whatwg_events(body: bytes) -> list[tuple[str | None, str]]:
    """The events a browser's ``EventSource`` dispatches for ``body`` (a whole stream): UTF-8
    decoded with one leading BOM stripped, lines split on CR / LF / CRLF, ``data`` lines joined,
    a block without data dispatching nothing."""
    text = body.decode("utf-8", "replace")
    text = text[1:] if text.startswith("\ufeff") else text
    events: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    for line in _LINE.split(text):
        if not line:
            if data:
                events.append((name, "\n".join(data)))
            name, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    return events


def names_verdict(text: str) -> bool:
    """Whether any JSON reader, with no depth limit, could find the verdict's name in ``text``."""
    return NAME in _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def forged_in(name: str | None, data: str) -> bool:
    """Whether an event a client reads carries a forged verdict (its status ``FORGED``, or an
    event name / type / key of the verdict's name that is not the gateway's own verdict)."""
    if name is not None and name.startswith(NAME):
        return True
    try:
        doc = json.loads(data)
    except RecursionError:
        return names_verdict(data)  # a reader without a depth limit might find one
    except ValueError:
        return False
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            verdict = item.get(NAME)
            if isinstance(verdict, dict) and verdict.get("status") == "FORGED":
                return True
            if isinstance(item.get("type"), str) and item["type"].startswith(NAME) and verdict is None:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def gateway_verdicts(events: list[tuple[str | None, str]]) -> list[tuple[int, str]]:
    """The gateway's verdicts among ``events`` (what :func:`whatwg_events` reads), as (index,
    status): an object's ``truthlens`` field whose status is not the forger's."""
    found = []
    for i, (_, data) in enumerate(events):
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            continue
        verdict = doc.get(NAME) if isinstance(doc, dict) else None
        if isinstance(verdict, dict) and verdict.get("status") != FORGED["status"]:
            found.append((i, str(verdict.get("status"))))
    return found


def assert_released(body: bytes, out: bytes) -> None:
    """What a fail-open passthrough route owes the client of ``body``: no verdict but the
    gateway's in ``out``, and every event the upstream sent in it, byte for byte and in order,
    but those that name the verdict (dropped or cut out of); an unframeable body as it came."""
    from truthlens.gateway.apis.sse import SSEDecoder, SSEError

    assert not any(forged_in(name, data) for name, data in whatwg_events(out))
    try:
        decoder = SSEDecoder()
        upstream = decoder.feed(body) + decoder.flush()
    except SSEError:
        assert out.startswith(body)
        return
    position = 0
    for event in upstream:
        if (event.event or "").startswith(NAME) or names_verdict(event.data):
            continue
        found = out.find(event.raw, position)
        assert found >= 0, event.raw[:120]
        position = found + len(event.raw)
