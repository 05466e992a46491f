"""The pieces the edge tests stand on, alone: the scripted upstream's server options (it is the
test double under test; real HTTP through aiohttp) and the bounded model label of the metrics
(a real Prometheus registry). Nothing else is scripted."""

from __future__ import annotations

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from truthlens.gateway.core.telemetry import OTHER_LABEL, Telemetry
from truthlens.testing.script import ScriptError
from truthlens.testing.upstream import ScriptedUpstream

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


async def status_of(up: ScriptedUpstream, method: str, path: str) -> tuple[int, dict[str, str]]:
    # yarl would normalise the path itself: send it as written.
    async with aiohttp.ClientSession() as s, s.request(
        method, aiohttp.client.URL(up.url + path, encoded=True), json=BODY if method == "POST" else None
    ) as r:
        await r.read()
        return r.status, {k.lower(): v for k, v in r.headers.items()}


async def test_decode_paths_serves_what_a_lenient_server_reads() -> None:
    variants = ["/v1/chat%2Fcompletions", "//v1/chat/completions", "/v1/x/../chat/completions"]
    async with ScriptedUpstream() as up:
        for path in variants:
            assert (await status_of(up, "POST", path))[0] == 404  # off by default: aiohttp's own routing
        up.set_options({"decode_paths": True})
        for path in variants:
            assert (await status_of(up, "POST", path))[0] == 200, path
        assert (await status_of(up, "POST", "/v1/unknown"))[0] == 404
        assert len(up.calls) == len(variants)


async def test_extra_headers_go_on_every_answer_but_not_the_control_endpoints() -> None:
    async with ScriptedUpstream(extra_headers={"x-truthlens-detected": "false"}) as up:
        for method, path in (("POST", "/v1/chat/completions"), ("GET", "/v1/models"), ("GET", "/health")):
            assert (await status_of(up, method, path))[1]["x-truthlens-detected"] == "false"
        assert "x-truthlens-detected" not in (await status_of(up, "GET", "/_calls"))[1]


def test_bad_options_change_nothing() -> None:
    up = ScriptedUpstream()
    for bad, key in (({"decode_paths": "yes"}, "decode_paths"), ({"extra_headers": {"a": 1}}, "extra_headers"),
                     ({"nope": 1}, "nope")):
        with pytest.raises(ScriptError, match=key):
            up.set_options(bad)
    assert up.decode_paths is False and up.extra_headers == {}


def test_model_labels_are_the_configured_names_or_other() -> None:
    t = Telemetry(registry=CollectorRegistry())
    record = t.model_call_recorder(["default", "gpt-4o"])
    for i in range(50):
        record(f"client-{i}", "refine")
    record("gpt-4o", "refine")
    record("x" * 200_000, "judge")
    get = t.registry.get_sample_value
    assert get("truthlens_models_used_total", {"model": OTHER_LABEL, "role": "refine"}) == 50
    assert get("truthlens_models_used_total", {"model": "gpt-4o", "role": "refine"}) == 1
    assert get("truthlens_models_used_total", {"model": OTHER_LABEL, "role": "judge"}) == 1
    assert len(t.render_metrics()) < 20_000
