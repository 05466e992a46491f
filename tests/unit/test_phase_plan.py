"""The ext_proc phases an exchange asks Envoy for, decided from its request headers, and the
mode override that carries them. Pure (real config parsing, real pb2 messages); nothing is
scripted."""

from __future__ import annotations

from typing import Any

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange import mutations
from truthlens.gateway.exchange.phase_plan import PhasePlan, plan
from truthlens.gateway.policy.config import parse_config
from truthlens.gateway.policy.decisions import RequestFacts

CHECK = [{"type": "hallucination", "configuration": {"mode": "lightweight"}}]
OFF = [{"type": "hallucination", "configuration": {"enabled": False}}]


def config(*, extension_field: str | None = "truthlens_context") -> Any:
    return parse_config({
        "version": 1,
        "hallucination": {"context": {"extension_field": extension_field}},
        "decisions": [
            {"name": "tenant-off", "priority": 50, "plugins": OFF,
             "rules": {"type": "header", "name": "x-tenant", "value": "free"}},
            {"name": "medical", "priority": 40, "plugins": CHECK,
             "rules": {"operator": "AND", "conditions": [
                 {"type": "path", "prefix": "/v1/chat"}, {"type": "keyword", "any": ["dose"]}]}},
            {"name": "chat", "priority": 10, "plugins": CHECK, "rules": {"type": "path", "prefix": "/v1/chat"}},
        ],
    })


def facts(path: str = "/v1/chat/completions", **headers: str) -> RequestFacts:
    return RequestFacts(path=path, method="POST", headers=headers)


def test_a_checked_route_keeps_every_phase_a_check_may_use() -> None:
    # (the keyword rule of "medical" outranks "chat": the body decides between them)
    assert plan(config(), facts(), has_body=True) == PhasePlan(True, True, None, unchecked=False)
    cfg = parse_config({"version": 1, "decisions": [{"name": "chat", "plugins": CHECK}]})
    assert plan(cfg, facts(), has_body=True) == PhasePlan(True, True, True, unchecked=False)


def test_no_decision_needs_only_the_request_body_and_only_for_the_context_field() -> None:
    assert plan(config(), facts("/v1/embeddings"), has_body=True) == PhasePlan(True, False, False, unchecked=True)
    headers_only = plan(config(), facts("/v1/embeddings"), has_body=False)
    assert headers_only == PhasePlan(False, False, False, unchecked=True) and headers_only.headers_only
    no_field = plan(config(extension_field=None), facts("/v1/embeddings"), has_body=True)
    assert no_field.headers_only


def test_detection_off_needs_nothing_of_the_response() -> None:
    # The reply moves the exchange to the unmarked route: Envoy forwards the answer as alone, and
    # its own response_headers_to_remove drops the upstream's verdict headers.
    off = plan(config(), facts(**{"x-tenant": "free"}), has_body=True)
    assert off == PhasePlan(True, False, True, unchecked=True)
    assert plan(config(extension_field=None), facts(**{"x-tenant": "free"}), has_body=True) == PhasePlan(
        False, False, True, unchecked=True)


def test_the_reply_tells_envoy_the_plan_and_never_asks_for_trailers() -> None:
    for request_body in (True, False):
        for response in (True, False):
            wire = mutations.request_headers_reply(request_body=request_body, response=response).SerializeToString()
            reply = pb.ProcessingResponse.FromString(wire)
            assert reply.WhichOneof("response") == "request_headers"
            assert not reply.request_headers.response.HasField("header_mutation")
            mode = reply.mode_override
            assert mode.request_body_mode == (pb.ProcessingMode.BUFFERED if request_body else pb.ProcessingMode.NONE)
            assert mode.response_header_mode == (pb.ProcessingMode.SEND if response else pb.ProcessingMode.SKIP)
            assert mode.response_body_mode == pb.ProcessingMode.NONE  # the response headers' reply picks it
            assert mode.request_trailer_mode == mode.response_trailer_mode == pb.ProcessingMode.SKIP


def test_an_unchecked_exchange_is_moved_to_the_unmarked_route() -> None:
    # The metadata the processor:unchecked route matches, and a route cache cleared after a
    # header mutation (an empty one: Envoy re-picks the route only after a reply that has one).
    for set_headers in (None, {"accept-encoding": "identity"}):
        reply = mutations.request_headers_reply(request_body=True, response=False, set_headers=set_headers,
                                                unchecked=True)
        common = reply.request_headers.response
        assert common.clear_route_cache and common.HasField("header_mutation")
        assert {h.header.key for h in common.header_mutation.set_headers} == set(set_headers or ())
        assert not common.header_mutation.remove_headers
        assert dict(reply.dynamic_metadata) == {"truthlens": {"unchecked": True}}
    checked = mutations.request_headers_reply(request_body=True, response=True)
    assert not checked.request_headers.response.clear_route_cache and not checked.HasField("dynamic_metadata")
