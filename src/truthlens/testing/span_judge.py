"""The scripted upstream's span judge: a deterministic stand-in for a generative span detector.

This is NOT a model. It answers the requests of ``detector.backend: llm`` (and the cascade's
confirmer) the way an OpenAI-compatible server with structured outputs does, so tests can run
those backends over real HTTP: it reads the question, passages and answer from the request's
quoted data block and calls a piece of the answer unsupported when it is a number, or a run of
capitalised words (a name), that the context never contains (case-insensitive; a sentence's
capitalised first word that the context uses as a word, like "The" or "It", is not part of a
name). Each such piece is quoted as it stands in the answer, as often as it occurs, in order.

The request's ``response_format`` is honoured as a server would:

- ``json_schema`` whose schema asks for ``{"spans": [{"quote": ...}]}``: that object (OpenAI's
  strict rules are enforced: with ``strict: true`` a schema whose objects do not list every
  property as required, or allow additional properties, is refused with HTTP 400);
- ``json_object``: JSON of the judge's own shape (``{"unsupported": [...]}``), not the schema's;
- none: prose, as a chat model asked nothing else would write.

A script rule can hand a request to the judge with ``reply: {span_judge: {...}}`` (every key
optional) and bend its answer::

    span_judge: {quotes: ["..."],        # reply exactly these quotes instead of judging
                 extra_quotes: ["..."],  # appended to the judged ones (invented text, re-spaced copies)
                 malformed: true}        # the reply cut off halfway (not JSON)

Delays and HTTP errors come from the rule's ``delay_s`` and ``status`` as for any reply. A
request that no rule claims is judged when its ``response_format`` asks for the spans schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from truthlens.modes.quoting import read_data

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NAME = re.compile(r"[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n)$")


class JudgeScriptError(ValueError):
    """A rule's ``span_judge`` options are malformed; the message names the key."""


@dataclass(frozen=True, slots=True)
class JudgeScript:
    """How a script rule bends the judge's answer (see the module doc)."""

    quotes: tuple[str, ...] | None = None
    extra_quotes: tuple[str, ...] = ()
    malformed: bool = False


@dataclass(frozen=True, slots=True)
class Judged:
    """The judge's answer: the message content, or an HTTP 400 refusal of the request."""

    content: str = ""
    refusal: str | None = None


def parse_judge_script(raw: Any, where: str) -> JudgeScript:
    if raw is None or raw is True:
        return JudgeScript()
    if not isinstance(raw, Mapping):
        raise JudgeScriptError(f"{where}: must be a mapping (or true)")
    unknown = set(raw) - {"quotes", "extra_quotes", "malformed"}
    if unknown:
        raise JudgeScriptError(f"{where}: unknown keys {sorted(unknown)}")
    lists = {}
    for key in ("quotes", "extra_quotes"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, (list, tuple)) or not all(isinstance(q, str) for q in value)):
            raise JudgeScriptError(f"{where}.{key}: must be a list of strings")
        lists[key] = None if value is None else tuple(value)
    malformed = raw.get("malformed", False)
    if not isinstance(malformed, bool):
        raise JudgeScriptError(f"{where}.malformed: must be true or false")
    return JudgeScript(quotes=lists["quotes"], extra_quotes=lists["extra_quotes"] or (), malformed=malformed)


def asks_for_spans(body: Mapping[str, Any]) -> bool:
    """Whether the request's ``response_format`` is a JSON schema of the spans shape."""
    schema = _json_schema(body)
    return schema is not None and _is_spans_schema(schema.get("schema"))


def judge(body: Mapping[str, Any], script: JudgeScript | None = None) -> Judged:
    """The judge's answer to one chat request (``body``: its JSON)."""
    script = script or JudgeScript()
    fmt = body.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    schema = _json_schema(body)
    if kind == "json_schema" and schema is not None and schema.get("strict") is True:
        problem = strict_schema_problem(schema.get("schema"))
        if problem is not None:
            return Judged(refusal=f"Invalid schema for response_format {schema.get('name')!r}: {problem}")
    quotes = list(script.quotes) if script.quotes is not None else unsupported_quotes(_data(body))
    quotes += script.extra_quotes
    if kind == "json_schema" and schema is not None and _is_spans_schema(schema.get("schema")):
        text = json.dumps({"spans": [{"quote": q} for q in quotes]})
    elif kind in ("json_schema", "json_object"):
        text = json.dumps({"unsupported": quotes})  # valid JSON, but nobody's schema
    else:
        text = ("The answer is supported by the context." if not quotes
                else "These parts of the answer are not supported: " + "; ".join(quotes) + ".")
    if script.malformed:
        text = text[: len(text) // 2]
    return Judged(content=text)


def unsupported_quotes(data: Mapping[str, Any] | None) -> list[str]:
    """The answer's numbers and names the context does not contain, in answer order."""
    if not data or not isinstance(data.get("answer"), str):
        return []
    answer = data["answer"]
    passages = data.get("context")
    context = " ".join(p for p in passages if isinstance(p, str)) if isinstance(passages, list) else ""
    known = " ".join(context.split()).lower()
    found: list[tuple[int, str]] = []
    for m in _NUMBER.finditer(answer):
        if m.group() not in context:
            found.append((m.start(), m.group()))
    words = set(re.findall(r"[\w'’-]+", known))
    for m in _NAME.finditer(answer):
        start, name = m.start(), m.group()
        first, _, rest = name.partition(" ")
        if _SENTENCE_START.search(answer[:start]) and first.lower() in words:
            # "The", "It", "In" opening a sentence are ordinary words: judge what follows.
            if not rest.strip():
                continue
            start, name = start + len(name) - len(rest.lstrip()), rest.lstrip()
        if " ".join(name.split()).lower() not in known:
            found.append((start, name))
    return [quote for _, quote in sorted(found)]


def strict_schema_problem(schema: Any, where: str = "()") -> str | None:
    """What OpenAI's strict structured outputs refuse in ``schema`` (None: nothing)."""
    if not isinstance(schema, Mapping):
        return f"In context={where}, the schema must be an object."
    if schema.get("type") == "object":
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return f"In context={where}, 'properties' is required for an object."
        if schema.get("additionalProperties") is not False:
            return f"In context={where}, 'additionalProperties' is required to be supplied and to be false."
        required = schema.get("required")
        missing = [k for k in props if not isinstance(required, Sequence) or k not in required]
        if missing:
            return f"In context={where}, 'required' is required to include every property; missing {missing}."
        for name, sub in props.items():
            problem = strict_schema_problem(sub, f"{where}, 'properties', {name!r}")
            if problem is not None:
                return problem
    if schema.get("type") == "array":
        return strict_schema_problem(schema.get("items"), f"{where}, 'items'")
    return None


def _json_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    fmt = body.get("response_format")
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return None
    schema = fmt.get("json_schema")
    return schema if isinstance(schema, Mapping) else None


def _is_spans_schema(schema: Any) -> bool:
    try:
        item = schema["properties"]["spans"]["items"]
        return bool(item["properties"]["quote"]["type"] == "string")
    except (KeyError, TypeError):
        return False


def _data(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    users = [m.get("content") for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    last = users[-1] if users else None
    return read_data(last) if isinstance(last, str) else None
