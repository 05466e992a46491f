"""The scripted upstream's rule engine: rules read from YAML or JSON, the first rule that matches a
request, and what its reply streams as (the HTTP server: :mod:`truthlens.testing.upstream`).

Rule (YAML or JSON; every key optional)::

    name: refine-fixes-span
    match: {model: m, user: "substring", user_regex: "...", system: "...", system_regex: "...",
            any: "substring in any message", any_regex: "...", times: 1}
    reply: {content: "...", contents: ["choice 0 / call 1", "..."], cycle: false,
            status: 200, delay_s: 0, chunk_delay_s: 0, chunk_tokens: 2, error_body: {...},
            raw_body: "...", content_type: "...", content_encoding: gzip, break_sse: false,
            drop_after_chunks: 3, confidence: 0.9, logprobs: [-0.1, ...], finish_reason: stop,
            verdicts: {"substring": "refuted", "*": "supported"},
            headers: {x-extra: "1"}, extra_fields: {...}, extra_events: ["data: {...}\n\n"],
            chunked: false, content_length: false, repeat: 1,
            span_judge: {quotes: [...], extra_quotes: [...], malformed: false}}

``content_encoding: negotiate`` answers gzip exactly when the request's ``Accept-Encoding`` accepts
it, as nginx's ``gzip on`` and aiohttp's compression do. ``headers`` are added to the response,
``extra_fields`` merged into a JSON completion's top level, ``extra_events`` (raw SSE text) sent
before a stream's ``data: [DONE]``: an upstream that tries to speak for the gateway, for instance.
The same rules answer ``POST /v1/responses`` (matched on its input read as messages,
``instructions`` as the system message): one ``message`` item, ``finish_reason: length`` makes the
response ``incomplete``, ``extra_fields`` go into the response object and ``extra_events`` before
the terminal event; ``n`` and ``logprobs`` are chat's.

``verdicts`` scripts a verifier's claim verdicts (premium's verdict prompt): the reply is the
JSON ``{"verdicts": [{"claim": n, "verdict": ...}]}`` for the claims quoted in the request's
data block, each claim getting the verdict of the first key it contains (``*``: any other
claim; without it ``unknown``).

``span_judge`` answers as a generative span detector would (``truthlens.testing.span_judge``:
the answer's numbers and names the context lacks, quoted under the request's ``response_format``);
a request that no rule claims goes to the judge when its ``response_format`` asks for the spans
schema of ``detector.backend: llm``.

``contents`` are drawn in order across choices and successive calls of the rule (the last one
repeats unless ``cycle``).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from truthlens.modes.quoting import read_data
from truthlens.testing.span_judge import JudgeScript, JudgeScriptError, parse_judge_script

DEFAULT_CONTENT = "This is the scripted upstream's default answer."


_VERDICTS = ("supported", "refuted", "unknown")


_TOKEN_RE = re.compile(r"\s*\S+|\s+")


class ScriptError(ValueError):
    """A rule in the script is malformed; the message names the rule and key."""


@dataclass(frozen=True, slots=True)
class Match:
    model: str | None = None
    user: str | None = None
    user_regex: str | None = None
    system: str | None = None
    system_regex: str | None = None
    any: str | None = None
    any_regex: str | None = None
    times: int | None = None  # match only the rule's first ``times`` calls


@dataclass(frozen=True, slots=True)
class Reply:
    content: str | None = None
    contents: tuple[str, ...] = ()
    cycle: bool = False
    status: int = 200
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    chunk_tokens: int = 2
    error_body: Any = None
    raw_body: bytes | None = None
    content_type: str | None = None
    content_encoding: str | None = None
    break_sse: bool = False
    drop_after_chunks: int | None = None
    confidence: float | None = None
    logprobs: tuple[float, ...] = ()
    finish_reason: str = "stop"
    verdicts: tuple[tuple[str, str], ...] = ()  # (substring or "*", verdict), in order
    headers: tuple[tuple[str, str], ...] = ()
    extra_fields: Mapping[str, Any] | None = None
    extra_events: tuple[str, ...] = ()
    chunked: bool = False  # a JSON body without content-length (chunked transfer encoding)
    content_length: bool = False  # an SSE body sent whole with a content-length (a buffering proxy)
    repeat: int = 1  # the content is sent this many times over (very large answers, small scripts)
    span_judge: JudgeScript | None = None  # answer as a generative span detector (span_judge.py)


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    match: Match = field(default_factory=Match)
    reply: Reply = field(default_factory=Reply)


@dataclass(frozen=True, slots=True)
class Call:
    """One chat request the server received."""

    model: str
    messages: tuple[Mapping[str, Any], ...]
    params: Mapping[str, Any]  # every other body field (n, stream, temperature, ...)
    headers: Mapping[str, str]  # lower-case names
    rule: str  # the rule that answered
    time: float  # time.time() on arrival
    body_sha256: str = ""  # of the body bytes as they arrived (tests compare what the client sent)

    def as_json(self) -> dict[str, Any]:
        return {"model": self.model, "messages": list(self.messages), "params": dict(self.params),
                "headers": dict(self.headers), "rule": self.rule, "time": self.time,
                "body_sha256": self.body_sha256}


DEFAULT_RULE = Rule(name="default", reply=Reply(content=DEFAULT_CONTENT))


# Answers the span-detection requests no rule claims (their response_format asks for the spans schema).
SPAN_JUDGE_RULE = Rule(name="span_judge", reply=Reply(span_judge=JudgeScript()))


def typed(raw: Mapping[str, Any], key: str, types: type | tuple[type, ...], where: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    allowed = types if isinstance(types, tuple) else (types,)
    # bool is an int to isinstance; a rule saying `status: true` is a mistake, not 1.
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        names = "/".join(t.__name__ for t in allowed)
        raise ScriptError(f"{where}.{key}: expected {names}, got {type(value).__name__}")
    return value


def parse_rule(raw: Mapping[str, Any], index: int = 0) -> Rule:
    where = f"rules[{index}]"
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where}: a rule must be a mapping")
    unknown = set(raw) - {"name", "match", "reply"}
    if unknown:
        raise ScriptError(f"{where}: unknown keys {sorted(unknown)}")
    m = raw.get("match") or {}
    r = raw.get("reply") or {}
    for key, section, cls in (("match", m, Match), ("reply", r, Reply)):
        if not isinstance(section, Mapping):
            raise ScriptError(f"{where}.{key}: must be a mapping")
        extra = set(section) - set(cls.__slots__)
        if extra:
            raise ScriptError(f"{where}.{key}: unknown keys {sorted(extra)}")
    for key in ("user_regex", "system_regex", "any_regex"):
        pattern = typed(m, key, str, f"{where}.match")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ScriptError(f"{where}.match.{key}: bad regex: {exc}") from exc
    match = Match(
        model=typed(m, "model", str, f"{where}.match"),
        user=typed(m, "user", str, f"{where}.match"),
        user_regex=m.get("user_regex"),
        system=typed(m, "system", str, f"{where}.match"),
        system_regex=m.get("system_regex"),
        any=typed(m, "any", str, f"{where}.match"),
        any_regex=m.get("any_regex"),
        times=typed(m, "times", int, f"{where}.match"),
    )
    rw = f"{where}.reply"
    raw_body = r.get("raw_body")
    if isinstance(raw_body, str):
        raw_body = raw_body.encode("utf-8")
    elif raw_body is not None and not isinstance(raw_body, bytes):
        raise ScriptError(f"{rw}.raw_body: expected text or bytes")
    contents = typed(r, "contents", (list, tuple), rw) or ()
    if not all(isinstance(c, str) for c in contents):
        raise ScriptError(f"{rw}.contents: every item must be a string")
    logprobs = typed(r, "logprobs", (list, tuple), rw) or ()
    if not all(isinstance(x, (int, float)) and x <= 0 for x in logprobs):
        raise ScriptError(f"{rw}.logprobs: every item must be a number <= 0")
    confidence = typed(r, "confidence", (int, float), rw)
    if confidence is not None and not 0.0 < confidence <= 1.0:
        raise ScriptError(f"{rw}.confidence: must be in (0, 1]")
    encoding = typed(r, "content_encoding", str, rw)
    if encoding not in (None, "gzip", "identity", "negotiate"):
        raise ScriptError(f"{rw}.content_encoding: only gzip, identity or negotiate")
    extra_headers = typed(r, "headers", Mapping, rw) or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in extra_headers.items()):
        raise ScriptError(f"{rw}.headers: names and values must be strings")
    extra_events = typed(r, "extra_events", (list, tuple), rw) or ()
    if not all(isinstance(e, str) for e in extra_events):
        raise ScriptError(f"{rw}.extra_events: every item must be a string")
    chunk_tokens = typed(r, "chunk_tokens", int, rw)
    verdicts = typed(r, "verdicts", Mapping, rw) or {}
    for key, value in verdicts.items():
        if not isinstance(key, str) or value not in _VERDICTS:
            raise ScriptError(f"{rw}.verdicts: each key must be text and each value one of {list(_VERDICTS)}")
    if chunk_tokens is not None and chunk_tokens < 1:
        raise ScriptError(f"{rw}.chunk_tokens: must be >= 1")
    reply = Reply(
        content=typed(r, "content", str, rw),
        contents=tuple(contents),
        cycle=bool(typed(r, "cycle", bool, rw)),
        status=typed(r, "status", int, rw) or 200,
        delay_s=float(typed(r, "delay_s", (int, float), rw) or 0.0),
        chunk_delay_s=float(typed(r, "chunk_delay_s", (int, float), rw) or 0.0),
        chunk_tokens=chunk_tokens or 2,
        error_body=r.get("error_body"),
        raw_body=raw_body,
        content_type=typed(r, "content_type", str, rw),
        content_encoding=encoding,
        break_sse=bool(typed(r, "break_sse", bool, rw)),
        drop_after_chunks=typed(r, "drop_after_chunks", int, rw),
        confidence=float(confidence) if confidence is not None else None,
        logprobs=tuple(float(x) for x in logprobs),
        finish_reason=typed(r, "finish_reason", str, rw) or "stop",
        verdicts=tuple(verdicts.items()),
        headers=tuple(extra_headers.items()),
        extra_fields=typed(r, "extra_fields", Mapping, rw),
        extra_events=tuple(extra_events),
        chunked=bool(typed(r, "chunked", bool, rw)),
        content_length=bool(typed(r, "content_length", bool, rw)),
        repeat=typed(r, "repeat", int, rw) or 1,
        span_judge=_judge_script(r, rw),
    )
    return Rule(name=typed(raw, "name", str, where) or f"rule{index}", match=match, reply=reply)


def _judge_script(reply: Mapping[str, Any], where: str) -> JudgeScript | None:
    if reply.get("span_judge") in (None, False):
        return None
    try:
        return parse_judge_script(reply["span_judge"], f"{where}.span_judge")
    except JudgeScriptError as exc:
        raise ScriptError(str(exc)) from None


def parse_script(raw: Any) -> tuple[Rule, ...]:
    """A list of rules, or ``{"rules": [...]}``."""
    if isinstance(raw, Mapping):
        raw = raw.get("rules", [])
    if not isinstance(raw, (list, tuple)):
        raise ScriptError("script: expected a list of rules or {rules: [...]}")
    return tuple(r if isinstance(r, Rule) else parse_rule(r, i) for i, r in enumerate(raw))


def load_script(path: str | Path) -> tuple[Rule, ...]:
    return parse_script(yaml.safe_load(Path(path).read_text(encoding="utf-8")))


def message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return ""


def _hit(text: str, sub: str | None, regex: str | None) -> bool:
    if sub is not None and sub not in text:
        return False
    return regex is None or re.search(regex, text) is not None


def rule_matches(rule: Rule, model: str, messages: Sequence[Mapping[str, Any]], seen: int) -> bool:
    m = rule.match
    if m.times is not None and seen >= m.times:
        return False
    if m.model is not None and m.model != model:
        return False
    users = [message_text(x) for x in messages if x.get("role") == "user"]
    systems = "\n".join(message_text(x) for x in messages if x.get("role") in ("system", "developer"))
    everything = "\n".join(message_text(x) for x in messages)
    return (
        _hit(users[-1] if users else "", m.user, m.user_regex)
        and _hit(systems, m.system, m.system_regex)
        and _hit(everything, m.any, m.any_regex)
    )


def verdict_reply(verdicts: Sequence[tuple[str, str]], messages: Sequence[Mapping[str, Any]]) -> str:
    """The scripted verdicts for the claims quoted in the last user message's data block."""
    users = [message_text(m) for m in messages if m.get("role") == "user"]
    data = read_data(users[-1]) if users else None
    claims = data.get("claims") if data else None
    if not isinstance(claims, list):
        return "no claims to judge"  # unparseable as verdicts, as a confused model's reply would be
    out = []
    for item in claims:
        text = str(item.get("text", "")) if isinstance(item, Mapping) else ""
        verdict = next((v for k, v in verdicts if k != "*" and k in text),
                       next((v for k, v in verdicts if k == "*"), "unknown"))
        out.append({"claim": item.get("claim") if isinstance(item, Mapping) else None, "verdict": verdict})
    return json.dumps({"verdicts": out})


def tokens_of(text: str) -> list[str]:
    """Whitespace-led pieces whose concatenation is ``text`` (the double's 'tokens')."""
    return _TOKEN_RE.findall(text)


def _token_logprobs(reply: Reply, count: int) -> list[float]:
    if reply.logprobs:
        return [reply.logprobs[i % len(reply.logprobs)] for i in range(count)]
    confidence = reply.confidence if reply.confidence is not None else 0.9
    return [math.log(confidence)] * count


def logprob_entries(reply: Reply, tokens: list[str], top: int) -> list[dict[str, Any]]:
    entries = []
    for token, lp in zip(tokens, _token_logprobs(reply, len(tokens)), strict=True):
        rest = max(1e-9, 1.0 - math.exp(lp))
        alternatives = [
            {"token": f"{token}~{j}", "logprob": math.log(rest / (j + 1)), "bytes": list(f"{token}~{j}".encode())}
            for j in range(1, top)
        ]
        head = {"token": token, "logprob": lp, "bytes": list(token.encode())}
        entries.append({**head, "top_logprobs": ([head] + alternatives) if top else []})
    return entries


def chunk_events(reply: Reply, completion_id: str, model: str, contents: list[str], want_logprobs: bool,
                  top: int, include_usage: bool, prompt_tokens: int) -> list[dict[str, Any]]:
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": choices, **extra}

    events = [chunk([{"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                      "finish_reason": None} for i in range(len(contents))])]
    pieces = []
    for i, text in enumerate(contents):
        toks = tokens_of(text)
        entries = logprob_entries(reply, toks, top) if want_logprobs else []
        step = reply.chunk_tokens
        pieces.append([(i, "".join(toks[j:j + step]), entries[j:j + step]) for j in range(0, len(toks), step)])
    # Interleave choices the way a batched server does: one piece of each choice in turn.
    for round_ in range(max((len(p) for p in pieces), default=0)):
        for p in pieces:
            if round_ < len(p):
                i, text, entries = p[round_]
                lp = {"content": entries, "refusal": None} if want_logprobs else None
                events.append(chunk([{"index": i, "delta": {"content": text}, "logprobs": lp,
                                      "finish_reason": None}]))
    for i in range(len(contents)):
        events.append(chunk([{"index": i, "delta": {}, "logprobs": None, "finish_reason": reply.finish_reason}]))
    if include_usage:
        completion_tokens = sum(len(tokens_of(t)) for t in contents)
        events.append(chunk([], usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                       "total_tokens": prompt_tokens + completion_tokens}))
    return events


def sse_event(event: Mapping[str, Any], broken: bool) -> bytes:
    data = json.dumps(event)
    if broken:
        # Malformed framing: no blank line between events, and a cut-off JSON line.
        return f"data: {data[: len(data) // 2]}\n".encode()
    return f"data: {data}\n\n".encode()
