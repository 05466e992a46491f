"""A scripted OpenAI-compatible HTTP server: the project's only test double.

This is NOT a model. It answers ``POST /v1/chat/completions`` and ``POST /v1/responses`` (the
Responses API, :mod:`truthlens.testing.responses_upstream`) from an ordered list of rules
(first match wins) so that tests and ``truthlens demo`` can put a real HTTP upstream behind
Envoy and the LLM client without any weights. It speaks the real wire protocol: a
``chat.completion`` JSON body, or ``chat.completion.chunk`` server-sent events when
``stream: true`` (role delta, several content deltas, finish chunk, optional usage chunk,
``data: [DONE]``), ``n`` choices and per-token ``logprobs`` (deterministic: every token of a
rule with ``confidence: c`` has log-prob ``ln c``, or the rule lists them). Rules can also
inject faults: HTTP errors, delays, malformed bodies, gzip, broken SSE framing, dropped
connections.

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
            chunked: false, repeat: 1, span_judge: {quotes: [...], extra_quotes: [...], malformed: false}}

``headers`` are added to the response, ``extra_fields`` merged into a JSON completion's top
level, ``extra_events`` (raw SSE text) sent before a stream's ``data: [DONE]``: an upstream
that tries to speak for the gateway, for instance. The same rules answer ``POST /v1/responses``
(matched on its input read as messages, ``instructions`` as the system message): one ``message``
item, ``finish_reason: length`` makes the response ``incomplete``, ``extra_fields`` go into the
response object and ``extra_events`` before the terminal event; ``n`` and ``logprobs`` are chat's.

``verdicts`` scripts a verifier's claim verdicts (premium's verdict prompt): the reply is the
JSON ``{"verdicts": [{"claim": n, "verdict": ...}]}`` for the claims quoted in the request's
data block, each claim getting the verdict of the first key it contains (``*``: any other
claim; without it ``unknown``).

``span_judge`` answers as a generative span detector would (``truthlens.testing.span_judge``:
the answer's numbers and names the context lacks, quoted under the request's ``response_format``);
a request that no rule claims goes to the judge when its ``response_format`` asks for the spans
schema of ``detector.backend: llm``.

``contents`` are drawn in order across choices and successive calls of the rule (the last one
repeats unless ``cycle``). Control endpoints: ``POST /_script`` (replace the rules),
``GET /_calls`` (the call log: each request's body and headers, so tests can see the W3C
``traceparent`` every call arrived with), ``POST /_reset`` (clear the log and the rules' counters),
``GET|POST /_options`` (server options, each key optional; the script and ``/_reset`` leave them):

    decode_paths: false   # serve a path the way a lenient server reads it: percent-decoded (%2F
                          # included), repeated slashes merged, dot segments resolved
    loose_paths: false    # serve a path the way a loose router reads it: any case, trailing
                          # slashes and ;params ignored (/V1/Responses/, /v1/responses;x)
    extra_headers: {}     # response headers added to every answer (chat, models, health)

Run: ``truthlens upstream --host 127.0.0.1 --port 8000 [--script FILE]`` (the same as
``python -m truthlens.testing.upstream ...``);
embed: ``async with ScriptedUpstream(rules, port=0) as up: up.base_url``.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import math
import posixpath
import re
import time
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml
from aiohttp import web

from truthlens.gateway.core.paths import normal_path
from truthlens.modes.quoting import read_data
from truthlens.testing import responses_upstream
from truthlens.testing.span_judge import JudgeScript, JudgeScriptError, asks_for_spans, judge, parse_judge_script

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

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

    def as_json(self) -> dict[str, Any]:
        return {"model": self.model, "messages": list(self.messages), "params": dict(self.params),
                "headers": dict(self.headers), "rule": self.rule, "time": self.time}


DEFAULT_RULE = Rule(name="default", reply=Reply(content=DEFAULT_CONTENT))
# Answers the span-detection requests no rule claims (their response_format asks for the spans schema).
SPAN_JUDGE_RULE = Rule(name="span_judge", reply=Reply(span_judge=JudgeScript()))

# ---------------------------------------------------------------------------------------------
# Script parsing


def _typed(raw: Mapping[str, Any], key: str, types: type | tuple[type, ...], where: str) -> Any:
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
        pattern = _typed(m, key, str, f"{where}.match")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ScriptError(f"{where}.match.{key}: bad regex: {exc}") from exc
    match = Match(
        model=_typed(m, "model", str, f"{where}.match"),
        user=_typed(m, "user", str, f"{where}.match"),
        user_regex=m.get("user_regex"),
        system=_typed(m, "system", str, f"{where}.match"),
        system_regex=m.get("system_regex"),
        any=_typed(m, "any", str, f"{where}.match"),
        any_regex=m.get("any_regex"),
        times=_typed(m, "times", int, f"{where}.match"),
    )
    rw = f"{where}.reply"
    raw_body = r.get("raw_body")
    if isinstance(raw_body, str):
        raw_body = raw_body.encode("utf-8")
    elif raw_body is not None and not isinstance(raw_body, bytes):
        raise ScriptError(f"{rw}.raw_body: expected text or bytes")
    contents = _typed(r, "contents", (list, tuple), rw) or ()
    if not all(isinstance(c, str) for c in contents):
        raise ScriptError(f"{rw}.contents: every item must be a string")
    logprobs = _typed(r, "logprobs", (list, tuple), rw) or ()
    if not all(isinstance(x, (int, float)) and x <= 0 for x in logprobs):
        raise ScriptError(f"{rw}.logprobs: every item must be a number <= 0")
    confidence = _typed(r, "confidence", (int, float), rw)
    if confidence is not None and not 0.0 < confidence <= 1.0:
        raise ScriptError(f"{rw}.confidence: must be in (0, 1]")
    encoding = _typed(r, "content_encoding", str, rw)
    if encoding not in (None, "gzip", "identity"):
        raise ScriptError(f"{rw}.content_encoding: only gzip or identity")
    extra_headers = _typed(r, "headers", Mapping, rw) or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in extra_headers.items()):
        raise ScriptError(f"{rw}.headers: names and values must be strings")
    extra_events = _typed(r, "extra_events", (list, tuple), rw) or ()
    if not all(isinstance(e, str) for e in extra_events):
        raise ScriptError(f"{rw}.extra_events: every item must be a string")
    chunk_tokens = _typed(r, "chunk_tokens", int, rw)
    verdicts = _typed(r, "verdicts", Mapping, rw) or {}
    for key, value in verdicts.items():
        if not isinstance(key, str) or value not in _VERDICTS:
            raise ScriptError(f"{rw}.verdicts: each key must be text and each value one of {list(_VERDICTS)}")
    if chunk_tokens is not None and chunk_tokens < 1:
        raise ScriptError(f"{rw}.chunk_tokens: must be >= 1")
    reply = Reply(
        content=_typed(r, "content", str, rw),
        contents=tuple(contents),
        cycle=bool(_typed(r, "cycle", bool, rw)),
        status=_typed(r, "status", int, rw) or 200,
        delay_s=float(_typed(r, "delay_s", (int, float), rw) or 0.0),
        chunk_delay_s=float(_typed(r, "chunk_delay_s", (int, float), rw) or 0.0),
        chunk_tokens=chunk_tokens or 2,
        error_body=r.get("error_body"),
        raw_body=raw_body,
        content_type=_typed(r, "content_type", str, rw),
        content_encoding=encoding,
        break_sse=bool(_typed(r, "break_sse", bool, rw)),
        drop_after_chunks=_typed(r, "drop_after_chunks", int, rw),
        confidence=float(confidence) if confidence is not None else None,
        logprobs=tuple(float(x) for x in logprobs),
        finish_reason=_typed(r, "finish_reason", str, rw) or "stop",
        verdicts=tuple(verdicts.items()),
        headers=tuple(extra_headers.items()),
        extra_fields=_typed(r, "extra_fields", Mapping, rw),
        extra_events=tuple(extra_events),
        chunked=bool(_typed(r, "chunked", bool, rw)),
        repeat=_typed(r, "repeat", int, rw) or 1,
        span_judge=_judge_script(r, rw),
    )
    return Rule(name=_typed(raw, "name", str, where) or f"rule{index}", match=match, reply=reply)


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


# ---------------------------------------------------------------------------------------------
# Matching and reply content


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


def _matches(rule: Rule, model: str, messages: Sequence[Mapping[str, Any]], seen: int) -> bool:
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


def _logprob_entries(reply: Reply, tokens: list[str], top: int) -> list[dict[str, Any]]:
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


# ---------------------------------------------------------------------------------------------
# The server


class ScriptedUpstream:
    """The aiohttp application plus its rules, counters and call log."""

    def __init__(self, rules: Iterable[Rule | Mapping[str, Any]] = (), *, host: str = "127.0.0.1",
                 port: int = 0, default: Rule = DEFAULT_RULE, decode_paths: bool = False,
                 extra_headers: Mapping[str, str] | None = None) -> None:
        self.host = host
        self.port = port
        self.default = default
        self.rules: tuple[Rule, ...] = parse_script(list(rules))
        self.calls: list[Call] = []
        self._seen: dict[int, int] = {}  # rule position -> calls answered
        self._drawn: dict[int, int] = {}  # rule position -> contents drawn
        self._ids = 0
        self._runner: web.AppRunner | None = None
        self.decode_paths = decode_paths
        self.loose_paths = False
        self.extra_headers: dict[str, str] = dict(extra_headers or {})
        self.app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._lenient])
        self.app.router.add_post("/v1/chat/completions", self._chat)
        self.app.router.add_post("/v1/responses", self._responses)
        self.app.router.add_get("/v1/models", self._models)
        self.app.router.add_get("/health", self._health)
        self.app.router.add_post("/_script", self._script)
        self.app.router.add_get("/_calls", self._calls)
        self.app.router.add_post("/_reset", self._reset)
        self.app.router.add_get("/_options", self._options)
        self.app.router.add_post("/_options", self._options)
        self.app.on_response_prepare.append(self._add_extra_headers)
        self._served: dict[tuple[str, str], Handler] = {
            ("POST", "/v1/chat/completions"): self._chat, ("GET", "/v1/models"): self._models,
            ("GET", "/health"): self._health, ("POST", "/v1/responses"): self._responses,
        }

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    async def start(self) -> None:
        # handler_cancellation: a client that gives up (timeout test) must not leave a
        # sleeping handler that stalls shutdown.
        self._runner = web.AppRunner(self.app, handler_cancellation=True, access_log=None,
                                     shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]  # the bound socket tells the real port when port=0

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ScriptedUpstream:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- script control ---------------------------------------------------------------------
    def set_rules(self, rules: Iterable[Rule | Mapping[str, Any]]) -> None:
        self.rules = parse_script(list(rules))
        self.reset()

    def reset(self) -> None:
        self.calls.clear()
        self._seen.clear()
        self._drawn.clear()

    def calls_for(self, model: str) -> list[Call]:
        return [c for c in self.calls if c.model == model]

    def _pick(self, model: str, messages: Sequence[Mapping[str, Any]]) -> tuple[int, Rule]:
        for i, rule in enumerate(self.rules):
            if _matches(rule, model, messages, self._seen.get(i, 0)):
                self._seen[i] = self._seen.get(i, 0) + 1
                return i, rule
        return -1, self.default

    def _draw(self, key: int, reply: Reply, n: int, messages: Sequence[Mapping[str, Any]] = ()) -> list[str]:
        if reply.verdicts:
            return [verdict_reply(reply.verdicts, messages)] * n
        if not reply.contents:
            return [(reply.content if reply.content is not None else DEFAULT_CONTENT) * reply.repeat] * n
        out = []
        for _ in range(n):
            k = self._drawn.get(key, 0)
            self._drawn[key] = k + 1
            idx = k % len(reply.contents) if reply.cycle else min(k, len(reply.contents) - 1)
            out.append(reply.contents[idx])
        return out

    # -- handlers -----------------------------------------------------------------------------
    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _models(self, request: web.Request) -> web.Response:
        names = sorted({r.match.model for r in self.rules if r.match.model} | {"scripted"})
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "scripted"} for n in names]
        return web.json_response({"object": "list", "data": data})

    async def _script(self, request: web.Request) -> web.Response:
        try:
            self.set_rules(parse_script(await request.json()))
        except (ScriptError, ValueError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"rules": len(self.rules)})

    async def _calls(self, request: web.Request) -> web.Response:
        return web.json_response([c.as_json() for c in self.calls])

    async def _reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    async def _options(self, request: web.Request) -> web.Response:
        if request.method == "POST":
            try:
                self.set_options(await request.json())
            except (ScriptError, ValueError) as exc:
                return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"decode_paths": self.decode_paths, "loose_paths": self.loose_paths,
                                  "extra_headers": self.extra_headers})

    def set_options(self, raw: Any) -> None:
        """Apply ``/_options`` keys (each optional); a bad key or value changes nothing."""
        if not isinstance(raw, Mapping):
            raise ScriptError("options: expected a mapping")
        unknown = set(raw) - {"decode_paths", "loose_paths", "extra_headers"}
        if unknown:
            raise ScriptError(f"options: unknown keys {sorted(unknown)}")
        decode = _typed(raw, "decode_paths", bool, "options")
        loose = _typed(raw, "loose_paths", bool, "options")
        headers = _typed(raw, "extra_headers", dict, "options")
        if headers is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
            raise ScriptError("options.extra_headers: names and values must be strings")
        if decode is not None:
            self.decode_paths = decode
        if loose is not None:
            self.loose_paths = loose
        if headers is not None:
            self.extra_headers = dict(headers)

    async def _add_extra_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        if self.extra_headers and not request.path.startswith("/_"):
            response.headers.update(self.extra_headers)

    @web.middleware
    async def _lenient(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """A path no route names: with ``decode_paths``, read it as uvicorn-style servers do
        (fully percent-decoded, slashes merged, dot segments resolved) and serve that; with
        ``loose_paths``, as a loose router does (any case, no trailing slash or ;params)."""
        if self.decode_paths and request.match_info.http_exception is not None:
            path = posixpath.normpath(unquote(request.raw_path.split("?", 1)[0]))
            served = self._served.get((request.method, "/" + path.lstrip("/")))
            if served is not None:
                return await served(request)
        if self.loose_paths and request.match_info.http_exception is not None:
            served = self._served.get((request.method, normal_path(request.raw_path)))
            if served is not None:
                return await served(request)
        return await handler(request)

    async def _take(
        self, request: web.Request, body: Mapping[str, Any], model: str, messages: Sequence[Mapping[str, Any]],
        messages_field: str,
    ) -> tuple[int, Rule, web.Response | None]:
        """Pick the rule that answers a call, log the call (``params``: every body field but the
        model and ``messages_field``), wait the rule's delay; the scripted HTTP error, if any."""
        key, rule = self._pick(model, messages)
        if key < 0 and asks_for_spans(body):
            rule = SPAN_JUDGE_RULE  # an unscripted span-detection request: the judge answers it
        params = {k: v for k, v in body.items() if k not in ("model", messages_field)}
        self.calls.append(Call(model=model, messages=tuple(messages), params=params,
                               headers={k.lower(): v for k, v in request.headers.items()},
                               rule=rule.name, time=time.time()))
        if rule.reply.delay_s > 0:
            await asyncio.sleep(rule.reply.delay_s)
        return key, rule, _failure(rule.reply) if rule.reply.status >= 400 else None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("body must be an object with a messages list")
        except ValueError as exc:
            return _error(400, f"invalid request: {exc}", "invalid_request_error")
        model = str(body.get("model", ""))
        messages = [m for m in body["messages"] if isinstance(m, Mapping)]
        key, rule, failure = await self._take(request, body, model, messages, "messages")
        if failure is not None:
            return failure
        reply = rule.reply
        n = int(body.get("n") or 1)
        if reply.span_judge is not None:
            judged = judge(body, reply.span_judge)
            if judged.refusal is not None:
                return _error(400, judged.refusal, "invalid_request_error")
            contents = [judged.content] * n
        else:
            contents = self._draw(key, reply, n, messages)
        self._ids += 1
        completion_id = f"chatcmpl-scripted-{self._ids}"
        top = int(body.get("top_logprobs") or 0)
        want_logprobs = bool(body.get("logprobs"))
        prompt_tokens = sum(len(tokens_of(message_text(m))) for m in messages)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(request, reply, completion_id, model, contents,
                                      want_logprobs, top, include_usage, prompt_tokens)
        if reply.raw_body is not None:
            return await self._send(request, reply, reply.raw_body, reply.content_type or "application/json")
        choices = []
        completion_tokens = 0
        for i, text in enumerate(contents):
            toks = tokens_of(text)
            completion_tokens += len(toks)
            logprobs = {"content": _logprob_entries(reply, toks, top), "refusal": None} if want_logprobs else None
            choices.append({"index": i, "message": {"role": "assistant", "content": text, "refusal": None},
                            "logprobs": logprobs, "finish_reason": reply.finish_reason})
        payload = {
            "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
            **(reply.extra_fields or {}),
        }
        return await self._send(request, reply, json.dumps(payload).encode(),
                                reply.content_type or "application/json")

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/responses``: the Responses API, JSON or SSE (``stream: true``), from the same
        rules as chat (they match on the input read as messages, ``instructions`` as the system
        message); one ``message`` output item, ``finish_reason: length`` makes it incomplete."""
        try:
            body = await request.json()
            problem = responses_upstream.input_problem(body)
            if problem is not None:
                raise ValueError(problem)
        except ValueError as exc:
            return _error(400, f"invalid request: {exc}", "invalid_request_error")
        model = str(body.get("model", ""))
        messages = responses_upstream.input_messages(body)
        key, rule, failure = await self._take(request, body, model, messages, "input")
        if failure is not None:
            return failure
        reply = rule.reply
        texts = self._draw(key, reply, 1, messages)
        self._ids += 1
        response_id = f"resp_scripted_{self._ids}"
        status = "incomplete" if reply.finish_reason == "length" else "completed"
        input_tokens = sum(len(tokens_of(message_text(m))) for m in messages)
        output_tokens = sum(len(tokens_of(t)) for t in texts)
        usage = {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                 "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": input_tokens + output_tokens}
        if body.get("stream"):
            if reply.raw_body is not None:
                return await self._write_events(request, reply, [reply.raw_body])
            pieces = [["".join(toks[j:j + reply.chunk_tokens]) for j in range(0, len(toks), reply.chunk_tokens)]
                      for toks in map(tokens_of, texts)]
            events = [responses_upstream.encode(e, reply.break_sse) for e in responses_upstream.response_events(
                response_id, model, texts, pieces, status=status, usage=usage, extra=reply.extra_fields)]
            # Extra events go before the terminal event, where the gateway's verdict goes.
            events[-1:-1] = [e.encode("utf-8") for e in reply.extra_events]
            return await self._write_events(request, reply, events)
        if reply.raw_body is not None:
            return await self._send(request, reply, reply.raw_body, reply.content_type or "application/json")
        payload = responses_upstream.response_object(response_id, model, texts, created_at=int(time.time()),
                                                     status=status, usage=usage, extra=reply.extra_fields)
        return await self._send(request, reply, json.dumps(payload).encode(), reply.content_type or "application/json")

    async def _send(self, request: web.Request, reply: Reply, data: bytes, content_type: str) -> web.StreamResponse:
        headers = {"Content-Type": content_type, **dict(reply.headers)}
        if reply.content_encoding == "gzip":
            data = gzip.compress(data)
            headers["Content-Encoding"] = "gzip"
        if reply.chunked and reply.drop_after_chunks is None:
            resp = web.StreamResponse(headers=headers)
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            for start in range(0, len(data), 1 << 20):
                await resp.write(data[start : start + (1 << 20)])
            await resp.write_eof()
            return resp
        if reply.drop_after_chunks is None:
            return web.Response(body=data, headers=headers)
        # Announce the whole length, send half, then close: a truncated body on the wire.
        headers["Content-Length"] = str(len(data))
        resp = web.StreamResponse(headers=headers)
        await resp.prepare(request)
        await resp.write(data[: len(data) // 2])
        _drop(request)
        return resp

    async def _stream(self, request: web.Request, reply: Reply, completion_id: str, model: str,
                      contents: list[str], want_logprobs: bool, top: int, include_usage: bool,
                      prompt_tokens: int) -> web.StreamResponse:
        if reply.raw_body is not None:
            events: list[bytes] = [reply.raw_body]
        else:
            events = [_sse(e, reply.break_sse) for e in _chunk_events(
                reply, completion_id, model, contents, want_logprobs, top, include_usage, prompt_tokens)]
            events += [e.encode("utf-8") for e in reply.extra_events]
            events.append(b"data: [DONE]\n" if reply.break_sse else b"data: [DONE]\n\n")
        return await self._write_events(request, reply, events)

    async def _write_events(self, request: web.Request, reply: Reply, events: list[bytes]) -> web.StreamResponse:
        """Send ``events`` as an SSE body with the reply's faults (gzip, delays, a dropped connection)."""
        headers = {"Content-Type": reply.content_type or "text/event-stream", "Cache-Control": "no-cache",
                   **dict(reply.headers)}
        compressor = None
        if reply.content_encoding == "gzip":
            compressor = zlib.compressobj(wbits=31)  # gzip container, flushed per event
            headers["Content-Encoding"] = "gzip"
        resp = web.StreamResponse(headers=headers)
        await resp.prepare(request)
        for i, event in enumerate(events):
            if reply.drop_after_chunks is not None and i >= reply.drop_after_chunks:
                _drop(request)
                return resp
            if i and reply.chunk_delay_s > 0:
                await asyncio.sleep(reply.chunk_delay_s)
            if compressor is not None:
                event = compressor.compress(event) + compressor.flush(zlib.Z_SYNC_FLUSH)
            await resp.write(event)
        if compressor is not None:
            await resp.write(compressor.flush())
        await resp.write_eof()
        return resp


def _chunk_events(reply: Reply, completion_id: str, model: str, contents: list[str], want_logprobs: bool,
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
        entries = _logprob_entries(reply, toks, top) if want_logprobs else []
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


def _sse(event: Mapping[str, Any], broken: bool) -> bytes:
    data = json.dumps(event)
    if broken:
        # Malformed framing: no blank line between events, and a cut-off JSON line.
        return f"data: {data[: len(data) // 2]}\n".encode()
    return f"data: {data}\n\n".encode()


def _drop(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort() if hasattr(transport, "abort") else transport.close()


def _failure(reply: Reply) -> web.Response:
    """The scripted HTTP error: ``error_body`` as text or JSON, else an OpenAI error object."""
    if isinstance(reply.error_body, str):
        return web.Response(status=reply.status, text=reply.error_body, content_type=reply.content_type or "text/plain")
    return web.json_response(reply.error_body or _error_payload(reply.status), status=reply.status)


def _error_payload(status: int, message: str = "scripted failure", type_: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": str(status)}}


def _error(status: int, message: str, type_: str) -> web.Response:
    return web.json_response(_error_payload(status, message, type_), status=status)


# ---------------------------------------------------------------------------------------------
# Command line


async def _serve(host: str, port: int, rules: tuple[Rule, ...], decode_paths: bool = False) -> None:
    async with ScriptedUpstream(rules, host=host, port=port, decode_paths=decode_paths) as up:
        print(f"scripted upstream (test double, not a model) on {up.base_url} with {len(rules)} rules", flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible upstream (a test double, not a model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    scripts = parser.add_mutually_exclusive_group()
    scripts.add_argument("--script", help="YAML/JSON file with the rules (default: none; every request gets the "
                         "fallback answer)")
    scripts.add_argument("--demo", action="store_true",
                         help="the rules truthlens demo uses (the packaged demo script): the demo's questions get "
                         "its grounded, hallucinated and re-asked answers")
    parser.add_argument("--decode-paths", action="store_true",
                        help="serve percent-encoded, doubled-slash and dot-segment paths decoded (a lenient server)")
    args = parser.parse_args(argv)
    script = args.script
    if args.demo:
        from truthlens.starter import DEMO_SCRIPT

        script = str(DEMO_SCRIPT)
    rules = load_script(script) if script else ()
    print(f"scripted upstream (a test double, not a model) on http://{args.host}:{args.port}/v1, "
          f"{len(rules)} rules{f' from {script}' if script else ''}", flush=True)
    try:
        asyncio.run(_serve(args.host, args.port, rules, args.decode_paths))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
