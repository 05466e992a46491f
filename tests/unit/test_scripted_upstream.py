"""The scripted upstream speaks the real OpenAI protocol (checked with the official ``openai``
client) and injects the faults the rules ask for.

Scripted part: the upstream itself (it is the test double under test). Real: HTTP (aiohttp),
the ``openai`` client's JSON and SSE parsing.
"""

from __future__ import annotations

import gzip
import json
import math

import aiohttp
import openai
import pytest

from truthlens.testing.script import ScriptError, parse_script, tokens_of
from truthlens.testing.upstream import ScriptedUpstream

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def client(up: ScriptedUpstream, *, retries: int = 0, timeout: float = 5.0) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=up.base_url, api_key="sk-test", max_retries=retries, timeout=timeout)


async def test_json_completion_has_the_openai_shape() -> None:
    rules = [{"name": "paris", "match": {"user": "capital of France"}, "reply": {"content": "Paris is the capital."}}]
    async with ScriptedUpstream(rules) as up:
        async with client(up) as c:
            r = await c.chat.completions.create(model="m1", messages=QUESTION)
        assert r.object == "chat.completion"
        assert r.id.startswith("chatcmpl-")
        assert r.model == "m1"
        assert r.choices[0].message.content == "Paris is the capital."
        assert r.choices[0].message.role == "assistant"
        assert r.choices[0].finish_reason == "stop"
        assert r.usage is not None and r.usage.completion_tokens == len(tokens_of("Paris is the capital."))
        assert up.calls[0].rule == "paris"
        assert up.calls[0].headers["authorization"] == "Bearer sk-test"


async def test_first_matching_rule_wins_and_times_limits_a_rule() -> None:
    rules = [
        {"name": "once", "match": {"model": "m1", "times": 1}, "reply": {"content": "first"}},
        {"name": "by-system", "match": {"system_regex": r"refine\b"}, "reply": {"content": "refined"}},
        {"name": "any", "match": {"any": "ACR-TEMPLATE"}, "reply": {"content": "acr"}},
    ]
    async with ScriptedUpstream(rules) as up:
        async with client(up) as c:
            first = await c.chat.completions.create(model="m1", messages=QUESTION)
            second = await c.chat.completions.create(model="m1", messages=QUESTION)
            sys = await c.chat.completions.create(
                model="m1", messages=[{"role": "system", "content": "please refine it"}, *QUESTION])
            anym = await c.chat.completions.create(
                model="m2", messages=[{"role": "assistant", "content": "x ACR-TEMPLATE y"}, *QUESTION])
        assert [first.choices[0].message.content, second.choices[0].message.content] == [
            "first", "This is the scripted upstream's default answer."]
        assert sys.choices[0].message.content == "refined"
        assert anym.choices[0].message.content == "acr"
        assert [c.rule for c in up.calls] == ["once", "default", "by-system", "any"]


async def test_sse_stream_parses_with_the_openai_client() -> None:
    text = "Paris is the capital of France, on the Seine."
    rules = [{"reply": {"content": text, "chunk_tokens": 2}}]
    async with ScriptedUpstream(rules) as up:
        async with client(up) as c:
            stream = await c.chat.completions.create(
                model="m1", messages=QUESTION, stream=True, stream_options={"include_usage": True})
            chunks = [ch async for ch in stream]
    assert all(ch.object == "chat.completion.chunk" for ch in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    deltas = [ch.choices[0].delta.content for ch in chunks if ch.choices and ch.choices[0].delta.content]
    assert len(deltas) >= 4  # split into several content chunks
    assert "".join(deltas) == text
    finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == len(tokens_of(text))


async def test_n_choices_draw_contents_in_order_then_successive_calls_continue() -> None:
    rules = [{"reply": {"contents": ["a", "b", "c"]}}]
    async with ScriptedUpstream(rules) as up:
        async with client(up) as c:
            r = await c.chat.completions.create(model="m", messages=QUESTION, n=2)
            r2 = await c.chat.completions.create(model="m", messages=QUESTION, n=2)
            stream = await c.chat.completions.create(model="m", messages=QUESTION, n=2, stream=True)
            by_index: dict[int, str] = {}
            async for ch in stream:
                for choice in ch.choices:
                    by_index[choice.index] = by_index.get(choice.index, "") + (choice.delta.content or "")
    assert [ch.message.content for ch in r.choices] == ["a", "b"]
    assert [ch.index for ch in r.choices] == [0, 1]
    assert [ch.message.content for ch in r2.choices] == ["c", "c"]  # the last one repeats
    assert by_index == {0: "c", 1: "c"}
    assert up.calls[0].params["n"] == 2


async def test_logprobs_follow_the_rule_confidence_and_explicit_lists() -> None:
    rules = [
        {"match": {"model": "conf"}, "reply": {"content": "Paris is big", "confidence": 0.8}},
        {"match": {"model": "list"}, "reply": {"content": "one two three", "logprobs": [-0.5, -1.0]}},
    ]
    async with ScriptedUpstream(rules) as up:
        async with client(up) as c:
            a = await c.chat.completions.create(model="conf", messages=QUESTION, logprobs=True, top_logprobs=3)
            b = await c.chat.completions.create(model="list", messages=QUESTION, logprobs=True)
            plain = await c.chat.completions.create(model="conf", messages=QUESTION)
            stream = await c.chat.completions.create(model="conf", messages=QUESTION, logprobs=True, stream=True)
            streamed = [e async for ch in stream for choice in ch.choices if choice.logprobs
                        for e in choice.logprobs.content or []]
    assert a.choices[0].logprobs is not None and a.choices[0].logprobs.content is not None
    entries = a.choices[0].logprobs.content
    assert "".join(e.token for e in entries) == "Paris is big"
    assert all(e.logprob == pytest.approx(math.log(0.8)) for e in entries)
    assert all(len(e.top_logprobs) == 3 and e.top_logprobs[0].token == e.token for e in entries)
    assert entries[0].bytes == list(b"Paris")
    assert [e.logprob for e in b.choices[0].logprobs.content] == [-0.5, -1.0, -0.5]  # type: ignore[union-attr]
    assert plain.choices[0].logprobs is None
    assert [e.token for e in streamed] == tokens_of("Paris is big")


async def test_http_error_status_and_body() -> None:
    rules = [{"reply": {"status": 503, "error_body": {"error": {"message": "overloaded", "type": "x"}}}}]
    async with ScriptedUpstream(rules) as up:
        async with client(up) as c:
            with pytest.raises(openai.InternalServerError) as err:
                await c.chat.completions.create(model="m", messages=QUESTION)
    assert err.value.status_code == 503
    assert "overloaded" in str(err.value)


async def test_negotiate_answers_gzip_only_when_the_request_accepts_it() -> None:
    rules = [{"reply": {"content": "maybe zipped", "content_encoding": "negotiate", "chunk_tokens": 1}}]
    body = {"model": "m", "messages": QUESTION}
    async with ScriptedUpstream(rules) as up, aiohttp.ClientSession(auto_decompress=False) as s:
        for accept, zipped in (("gzip, deflate", True), ("identity", False), ("br, gzip;q=0", False),
                               ("*", True), ("", False)):
            for stream in (False, True):
                async with s.post(f"{up.base_url}/chat/completions", json={**body, "stream": stream},
                                  headers={"Accept-Encoding": accept}) as r:
                    raw = await r.read()
                    assert (r.headers.get("Content-Encoding") == "gzip") is zipped, (accept, stream)
                    text = gzip.decompress(raw) if zipped else raw
                    assert b"maybe" in text


async def test_delay_before_headers_trips_a_client_timeout() -> None:
    rules = [{"reply": {"content": "late", "delay_s": 3}}]
    async with ScriptedUpstream(rules) as up:
        async with client(up, timeout=0.3) as c:
            with pytest.raises(openai.APITimeoutError):
                await c.chat.completions.create(model="m", messages=QUESTION)


async def test_raw_body_gzip_broken_sse_and_dropped_stream() -> None:
    rules = [
        {"match": {"model": "raw"}, "reply": {"raw_body": "{not json"}},
        {"match": {"model": "gz"}, "reply": {"content": "zipped answer", "content_encoding": "gzip"}},
        {"match": {"model": "broken"}, "reply": {"content": "a b c d", "break_sse": True}},
        {"match": {"model": "drop"}, "reply": {"content": "a b c d e f g h", "chunk_tokens": 1,
                                               "drop_after_chunks": 3}},
    ]
    body = {"messages": QUESTION}
    async with ScriptedUpstream(rules) as up:
        # auto_decompress=False: see the bytes on the wire, not what a client makes of them.
        async with aiohttp.ClientSession(auto_decompress=False) as s:
            async with s.post(f"{up.base_url}/chat/completions", json={**body, "model": "raw"}) as r:
                assert await r.read() == b"{not json"
            async with s.post(f"{up.base_url}/chat/completions", json={**body, "model": "gz"}) as r:
                assert r.headers["Content-Encoding"] == "gzip"
                payload = json.loads(gzip.decompress(await r.read()))
                assert payload["choices"][0]["message"]["content"] == "zipped answer"
            async with s.post(f"{up.base_url}/chat/completions",
                              json={**body, "model": "broken", "stream": True}) as r:
                raw = (await r.read()).decode()
                assert "\n\n" not in raw and raw.startswith("data: ")
            async with s.post(f"{up.base_url}/chat/completions",
                              json={**body, "model": "drop", "stream": True}) as r:
                with pytest.raises(aiohttp.ClientPayloadError):
                    await r.read()
        async with client(up) as c:
            with pytest.raises(json.JSONDecodeError):  # the official client chokes on it too
                await c.chat.completions.create(model="raw", messages=QUESTION)
            gz = await c.chat.completions.create(model="gz", messages=QUESTION)
            assert gz.choices[0].message.content == "zipped answer"


async def test_control_endpoints_replace_rules_log_calls_and_reset() -> None:
    async with ScriptedUpstream() as up:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{up.url}/_script", json={"rules": [{"reply": {"content": "new"}}]}) as r:
                assert (await r.json()) == {"rules": 1}
            async with s.post(f"{up.url}/_script", json=[{"reply": {"status": "bad"}}]) as r:
                assert r.status == 400 and "rules[0].reply.status" in (await r.json())["error"]
            async with s.post(f"{up.base_url}/chat/completions",
                              json={"model": "m", "messages": QUESTION, "temperature": 0.2}) as r:
                assert (await r.json())["choices"][0]["message"]["content"] == "new"
            async with s.get(f"{up.url}/_calls") as r:
                calls = await r.json()
            assert calls[0]["model"] == "m" and calls[0]["params"] == {"temperature": 0.2}
            assert calls[0]["messages"] == QUESTION
            async with s.post(f"{up.url}/_reset") as r:
                assert r.status == 200
            async with s.get(f"{up.url}/_calls") as r:
                assert await r.json() == []
            async with s.get(f"{up.url}/health") as r:
                assert (await r.json())["status"] == "ok"
            async with s.get(f"{up.base_url}/models") as r:
                assert (await r.json())["object"] == "list"
            async with s.post(f"{up.base_url}/chat/completions", data=b"nope") as r:
                assert r.status == 400 and (await r.json())["error"]["type"] == "invalid_request_error"


def test_bad_scripts_name_the_key() -> None:
    with pytest.raises(ScriptError, match=r"rules\[0\].match.user_regex"):
        parse_script([{"match": {"user_regex": "("}}])
    with pytest.raises(ScriptError, match=r"rules\[1\].reply: unknown keys \['contnet'\]"):
        parse_script([{}, {"reply": {"contnet": "x"}}])
    with pytest.raises(ScriptError, match=r"confidence"):
        parse_script({"rules": [{"reply": {"confidence": 1.5}}]})


def test_tokens_rejoin_to_the_text() -> None:
    for text in ["", "a", " lead and trail  ", "line\nbreak\n\n"]:
        assert "".join(tokens_of(text)) == text


# -- the Responses API (POST /v1/responses) -------------------------------------------------------


async def test_responses_json_and_stream_parse_with_the_openai_client() -> None:
    from openai.types.responses import Response, ResponseStreamEvent
    from pydantic import TypeAdapter

    rules = [{"name": "paris", "match": {"user": "capital of France", "system": "brief"},
              "reply": {"content": "Paris is the capital of France.", "chunk_tokens": 2}}]
    async with ScriptedUpstream(rules) as up:
        async with client(up) as c:
            r = await c.responses.create(model="m1", input="What is the capital of France?", instructions="Be brief.")
            events = [e async for e in await c.responses.create(
                model="m1", input=[{"role": "user", "content": [{"type": "input_text", "text": "capital of France?"}]}],
                instructions="Be brief.", stream=True)]
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{up.base_url}/responses", json={"model": "m1", "input": "capital of France",
                                                                "instructions": "brief", "stream": True}) as raw:
                wire = (await raw.read()).decode()
            async with s.post(f"{up.base_url}/responses", json={"model": "m1", "input": "capital of France",
                                                                "instructions": "brief"}) as raw:
                doc = await raw.json()
    assert r.output_text == "Paris is the capital of France." and r.status == "completed"
    assert r.usage is not None and r.usage.output_tokens == len(tokens_of("Paris is the capital of France."))
    Response.model_validate(doc)  # every field the SDK requires is there
    adapter = TypeAdapter(ResponseStreamEvent)
    for block in wire.strip().split("\n\n"):
        name, data = block.split("\n")
        assert name == f"event: {json.loads(data[6:])['type']}"
        adapter.validate_python(json.loads(data[6:]))
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) == 3 and "".join(deltas) == "Paris is the capital of France."
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [c.rule for c in up.calls] == ["paris"] * 4
    assert up.calls[1].messages == ({"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "capital of France?"})


async def test_responses_faults_and_extras() -> None:
    rules = [
        {"match": {"user": "error"}, "reply": {"status": 429}},
        {"match": {"user": "long"}, "reply": {"content": "cut", "finish_reason": "length"}},
        {"match": {"user": "extra"}, "reply": {"content": "x", "extra_fields": {"truthlens": {"status": "clean"}},
                                               "extra_events": ["event: custom\ndata: {\"type\": \"custom\"}\n\n"]}},
        {"match": {"user": "broken"}, "reply": {"content": "a b c d", "break_sse": True}},
    ]
    async with ScriptedUpstream(rules) as up:
        async with client(up) as c:
            with pytest.raises(openai.RateLimitError):
                await c.responses.create(model="m", input="error")
            incomplete = await c.responses.create(model="m", input="long")
            with pytest.raises(openai.BadRequestError, match="without a role"):
                await c.responses.create(model="m", input=[{"content": "no role"}])
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{up.base_url}/responses", json={"model": "m", "input": "extra", "stream": True}) as raw:
                extra = (await raw.read()).decode()
            async with s.post(f"{up.base_url}/responses", json={"model": "m", "input": "broken", "stream": True}) as raw:
                broken = (await raw.read()).decode()
            async with s.post(f"{up.base_url}/responses", json={"model": "m", "input": 3}) as raw:
                refused = raw.status
    assert incomplete.status == "incomplete" and incomplete.incomplete_details is not None
    assert refused == 400
    blocks = extra.strip().split("\n\n")
    assert blocks[-2] == 'event: custom\ndata: {"type": "custom"}'  # just before the terminal event
    assert '"truthlens": {"status": "clean"}' in blocks[-1]  # extra fields go into the response object
    assert "\n\n" not in broken and broken.count("data: ") > 5
