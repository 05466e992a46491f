"""A scripted OpenAI-compatible HTTP server: the project's only test double.

This is NOT a model. It answers ``POST /v1/chat/completions``, ``POST /v1/responses`` (the
Responses API, :mod:`truthlens.testing.responses_upstream`) and ``POST /v1/completions``
(:mod:`truthlens.testing.completions_upstream`) from an ordered list of rules
(first match wins) so that tests and ``truthlens demo`` can put a real HTTP upstream behind
Envoy and the LLM client without any weights. It speaks the real wire protocol: a
``chat.completion`` JSON body, or ``chat.completion.chunk`` server-sent events when
``stream: true`` (role delta, several content deltas, finish chunk, optional usage chunk,
``data: [DONE]``), ``n`` choices and per-token ``logprobs`` (deterministic: every token of a
rule with ``confidence: c`` has log-prob ``ln c``, or the rule lists them). Rules can also
inject faults: HTTP errors, delays, malformed bodies, gzip, broken SSE framing, dropped
connections.

The rules, their format and what a reply looks like on the wire: :mod:`truthlens.testing.script`.
Control endpoints: ``POST /_script`` (replace the rules),
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
import hashlib
import json
import logging
import posixpath
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from truthlens.gateway.core.paths import normal_path
from truthlens.testing import completions_upstream, responses_upstream
from truthlens.testing.script import (
    DEFAULT_CONTENT,
    DEFAULT_RULE,
    SPAN_JUDGE_RULE,
    Call,
    Reply,
    Rule,
    ScriptError,
    chunk_events,
    load_script,
    logprob_entries,
    message_text,
    parse_script,
    rule_matches,
    sse_event,
    tokens_of,
    typed,
    verdict_reply,
)
from truthlens.testing.span_judge import asks_for_spans, judge
from truthlens.testing.wire import chat_problem, error_response, failure, request_body, send, write_events

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# ---------------------------------------------------------------------------------------------
# Script parsing


# ---------------------------------------------------------------------------------------------
# Matching and reply content


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
        self.app.router.add_post("/v1/completions", self._completions)
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
            ("POST", "/v1/completions"): self._completions,
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
            if rule_matches(rule, model, messages, self._seen.get(i, 0)):
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
        decode = typed(raw, "decode_paths", bool, "options")
        loose = typed(raw, "loose_paths", bool, "options")
        headers = typed(raw, "extra_headers", dict, "options")
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
        # One line per request (the command line shows them; tests read the call log instead).
        log.info("%s %s model=%s rule=%s%s", request.method, request.path, model or "-", rule.name,
                 " stream" if body.get("stream") else "")
        raw = await request.read()  # already read by request.json(): aiohttp keeps the bytes
        self.calls.append(Call(model=model, messages=tuple(messages), params=params,
                               headers={k.lower(): v for k, v in request.headers.items()},
                               rule=rule.name, time=time.time(), body_sha256=hashlib.sha256(raw).hexdigest()))
        if rule.reply.delay_s > 0:
            await asyncio.sleep(rule.reply.delay_s)
        return key, rule, failure(rule.reply) if rule.reply.status >= 400 else None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request_body(request, chat_problem)
        if isinstance(body, web.StreamResponse):
            return body
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
                return error_response(400, judged.refusal, "invalid_request_error")
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
            return await send(request, reply, reply.raw_body, reply.content_type or "application/json")
        choices = []
        completion_tokens = 0
        for i, text in enumerate(contents):
            toks = tokens_of(text)
            completion_tokens += len(toks)
            logprobs = {"content": logprob_entries(reply, toks, top), "refusal": None} if want_logprobs else None
            choices.append({"index": i, "message": {"role": "assistant", "content": text, "refusal": None},
                            "logprobs": logprobs, "finish_reason": reply.finish_reason})
        payload = {
            "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
            **(reply.extra_fields or {}),
        }
        return await send(request, reply, json.dumps(payload).encode(),
                                reply.content_type or "application/json")

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/responses``: the Responses API, JSON or SSE (``stream: true``), from the same
        rules as chat (they match on the input read as messages, ``instructions`` as the system
        message); one ``message`` output item, ``finish_reason: length`` makes it incomplete."""
        body = await request_body(request, responses_upstream.input_problem)
        if isinstance(body, web.StreamResponse):
            return body
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
                return await write_events(request, reply, [reply.raw_body])
            pieces = [["".join(toks[j:j + reply.chunk_tokens]) for j in range(0, len(toks), reply.chunk_tokens)]
                      for toks in map(tokens_of, texts)]
            events = [responses_upstream.encode(e, reply.break_sse) for e in responses_upstream.response_events(
                response_id, model, texts, pieces, status=status, usage=usage, extra=reply.extra_fields)]
            # Extra events go before the terminal event, where the gateway's verdict goes.
            events[-1:-1] = [e.encode("utf-8") for e in reply.extra_events]
            return await write_events(request, reply, events)
        if reply.raw_body is not None:
            return await send(request, reply, reply.raw_body, reply.content_type or "application/json")
        payload = responses_upstream.response_object(response_id, model, texts, created_at=int(time.time()),
                                                     status=status, usage=usage, extra=reply.extra_fields)
        return await send(request, reply, json.dumps(payload).encode(), reply.content_type or "application/json")

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/completions``: the legacy API, JSON or SSE, from the same rules as chat
        (they match on the prompt read as a user message); ``n`` answers per call."""
        body = await request_body(request, completions_upstream.prompt_problem)
        if isinstance(body, web.StreamResponse):
            return body
        model, messages = str(body.get("model", "")), completions_upstream.prompt_messages(body)
        key, rule, failure = await self._take(request, body, model, messages, "prompt")
        if failure is not None:
            return failure
        texts = self._draw(key, rule.reply, int(body.get("n") or 1) * len(messages), messages)
        self._ids += 1
        return await completions_upstream.answer(request, rule.reply, body, f"cmpl-scripted-{self._ids}", texts)

    async def _stream(self, request: web.Request, reply: Reply, completion_id: str, model: str,
                      contents: list[str], want_logprobs: bool, top: int, include_usage: bool,
                      prompt_tokens: int) -> web.StreamResponse:
        if reply.raw_body is not None:
            events: list[bytes] = [reply.raw_body]
        else:
            events = [sse_event(e, reply.break_sse) for e in chunk_events(
                reply, completion_id, model, contents, want_logprobs, top, include_usage, prompt_tokens)]
            events += [e.encode("utf-8") for e in reply.extra_events]
            events.append(b"data: [DONE]\n" if reply.break_sse else b"data: [DONE]\n\n")
        return await write_events(request, reply, events)


# ---------------------------------------------------------------------------------------------
# Command line


async def _serve(host: str, port: int, rules: tuple[Rule, ...], decode_paths: bool = False) -> None:
    async with ScriptedUpstream(rules, host=host, port=port, decode_paths=decode_paths) as up:
        print(f"scripted upstream (test double, not a model) on {up.base_url} with {len(rules)} rules", flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> None:
    from truthlens.cli_help import HelpWithDefaults

    parser = argparse.ArgumentParser(prog="truthlens upstream",
                                     description="Scripted OpenAI-compatible upstream (a test double, not a model)",
                                     formatter_class=HelpWithDefaults)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    scripts = parser.add_mutually_exclusive_group()
    scripts.add_argument("--script", help="YAML/JSON file with the rules (default: none; every request gets the "
                         "fallback answer)")
    scripts.add_argument("--demo", action="store_true",
                         help="the rules truthlens demo uses (the packaged demo script): the demo's questions get "
                         "its grounded, hallucinated and re-asked answers")
    parser.add_argument("--decode-paths", action="store_true",
                        help="serve percent-encoded, doubled-slash and dot-segment paths decoded (a lenient server)")
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(asctime)s %(message)s")
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
