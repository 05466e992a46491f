"""The unchecked exchange's hot path keeps its meaning where it was made cheaper: request-headers
replies copied from prebuilt ones never share state between exchanges, the one pass over the
headers still joins repeated names and keeps each value, and the cached path normalisation reads
every path as the uncached rule does. Pure (real pb2 messages); nothing is scripted."""

from __future__ import annotations

import random

import pytest

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.core import paths, unchecked_route
from truthlens.gateway.exchange import mutations
from truthlens.gateway.exchange.phases.request_headers import read_headers


def header_map(pairs: list[tuple[str, bytes]]) -> pb.HeaderMap:
    out = pb.HeaderMap()
    for key, raw in pairs:
        h = out.headers.add()
        h.key = key
        h.raw_value = raw
    return out


@pytest.mark.parametrize("request_body", [False, True])
@pytest.mark.parametrize("response", [False, True])
@pytest.mark.parametrize("unchecked", [False, True])
def test_a_request_headers_reply_says_what_it_was_asked(request_body: bool, response: bool, unchecked: bool) -> None:
    reply = mutations.request_headers_reply(request_body=request_body, response=response, unchecked=unchecked)
    mode = reply.mode_override
    assert mode.request_body_mode == (pb.ProcessingMode.BUFFERED if request_body else pb.ProcessingMode.NONE)
    assert mode.response_header_mode == (pb.ProcessingMode.SEND if response else pb.ProcessingMode.SKIP)
    assert mode.response_body_mode == pb.ProcessingMode.NONE
    assert mode.request_trailer_mode == mode.response_trailer_mode == pb.ProcessingMode.SKIP
    common = reply.request_headers.response
    assert reply.HasField("request_headers")
    assert common.clear_route_cache is unchecked
    assert common.HasField("header_mutation") is unchecked  # Envoy re-routes only after a mutation
    marked = reply.dynamic_metadata.fields[unchecked_route.NAMESPACE].struct_value.fields if unchecked else {}
    assert (unchecked_route.UNCHECKED_KEY in marked) is unchecked
    if unchecked:
        assert marked[unchecked_route.UNCHECKED_KEY].bool_value is True
    assert not common.header_mutation.set_headers


def test_what_one_exchange_adds_to_its_reply_never_reaches_the_next() -> None:
    first = mutations.request_headers_reply(request_body=True, response=False, unchecked=True,
                                            set_headers={"accept-encoding": "identity"})
    first.request_headers.response.header_mutation.remove_headers.append("x-one")
    first.dynamic_metadata.fields["other"].string_value = "kept here only"
    second = mutations.request_headers_reply(request_body=True, response=False, unchecked=True)
    assert not second.request_headers.response.header_mutation.set_headers
    assert not second.request_headers.response.header_mutation.remove_headers
    assert set(second.dynamic_metadata.fields) == {unchecked_route.NAMESPACE}
    assert [(o.header.key, o.header.raw_value) for o in first.request_headers.response.header_mutation.set_headers] \
        == [("accept-encoding", b"identity")]


def test_headers_are_read_in_one_pass_with_repeated_names_joined_and_kept_apart() -> None:
    headers, repeated = read_headers(header_map([
        (":path", b"/v1/chat/completions"), ("X-Team", b"a"), ("x-team", b"platform"),
        ("x-request-id", b"caf\xe9"), ("x-team", b"ops"), ("accept", b"*/*"),
    ]))
    assert headers == {":path": "/v1/chat/completions", "x-team": "a,platform,ops",
                       "x-request-id": "caf\udce9", "accept": "*/*"}
    assert repeated == {"x-team": ("a", "platform", "ops")}
    # The value's bytes go back out as they came (surrogateescape), as mutations.header_value reads them.
    assert headers["x-request-id"].encode("utf-8", mutations.HEADER_ERRORS) == b"caf\xe9"


def test_a_header_without_raw_value_is_read_from_value() -> None:
    m = pb.HeaderMap()
    h = m.headers.add()
    h.key, h.value = "x-old", "plain"
    assert read_headers(m) == ({"x-old": "plain"}, {})


def test_the_cached_path_rule_reads_every_path_as_the_rule_does() -> None:
    rng = random.Random(54)
    alphabet = "/;?#vV1cChatCOMPLETIONSresponses%2e.-x"
    spelt = ["/v1/chat/completions", "/V1/Chat/Completions/", "/v1/responses;x", "/v1/responses/?a=b",
             "/", "", "//", "/v1;a/chat;b/completions;c?d#e"]
    spelt += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(500)]
    spelt.append("/v1/" + "x" * 300 + "/Completions/")  # past the cached length: computed each time
    for path in spelt + spelt:  # the second time from the cache
        assert paths.normal_path(path) == paths._normal_path(path), path
