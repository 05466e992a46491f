"""The pb2 replies the processor sends Envoy: wire field numbers, header values in
``raw_value``, content-length on replaced bodies, mode overrides, immediate responses.
Nothing is scripted: these are the real generated messages, round-tripped through bytes."""

from __future__ import annotations

import pytest

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange import mutations


def _roundtrip(reply: pb.ProcessingResponse) -> pb.ProcessingResponse:
    return pb.ProcessingResponse.FromString(reply.SerializeToString())


def _headers(mutation: pb.HeaderMutation) -> dict[str, str]:
    return {o.header.key: o.header.raw_value.decode() for o in mutation.set_headers}


@pytest.mark.parametrize(
    "phase",
    ["request_headers", "response_headers", "request_body", "response_body", "request_trailers", "response_trailers"],
)
def test_passthrough_sets_exactly_the_phase_and_nothing_else(phase: mutations.Phase) -> None:
    reply = _roundtrip(mutations.passthrough(phase))
    assert reply.WhichOneof("response") == phase
    assert not reply.HasField("mode_override")
    if "trailers" not in phase:
        common = getattr(reply, phase).response
        assert common.status == pb.CommonResponse.CONTINUE
        assert not common.HasField("header_mutation") and not common.HasField("body_mutation")


def test_wire_field_numbers_match_envoys_api() -> None:
    # ProcessingResponse.response_body = 4, BodyResponse.response = 1, CommonResponse.body_mutation = 3,
    # BodyMutation.body = 1: the bytes Envoy's decoder expects (tag = field << 3 | wire type 2).
    wire = mutations.chunk_reply("response_body", b"xy").SerializeToString()
    assert wire == bytes([0x22, 0x08, 0x0A, 0x06, 0x1A, 0x04, 0x0A, 0x02]) + b"xy"
    assert pb.ProcessingRequest.DESCRIPTOR.fields_by_name["attributes"].number == 9
    assert pb.HeaderValue.DESCRIPTOR.fields_by_name["raw_value"].number == 3
    assert pb.ProcessingResponse.DESCRIPTOR.fields_by_name["mode_override"].number == 9
    assert pb.ImmediateResponse.DESCRIPTOR.fields_by_name["body"].number == 3


def test_body_reply_sets_content_length_of_the_new_body() -> None:
    body = "héllo ⚠️".encode()
    reply = _roundtrip(mutations.body_reply("response_body", body=body, set_headers={"x-truthlens-detected": "true"}))
    common = reply.response_body.response
    assert common.body_mutation.body == body
    headers = _headers(common.header_mutation)
    assert headers == {"x-truthlens-detected": "true", "content-length": str(len(body))}
    for option in common.header_mutation.set_headers:
        assert option.append_action == pb.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD
        assert option.header.value == ""  # Envoy reads raw_value


def test_body_reply_without_body_keeps_the_body_and_its_length() -> None:
    common = _roundtrip(mutations.body_reply("response_body", set_headers={"a": "1"}, remove=["b"])).response_body.response
    assert not common.HasField("body_mutation")
    assert _headers(common.header_mutation) == {"a": "1"}
    assert list(common.header_mutation.remove_headers) == ["b"]


def test_headers_reply_switches_the_response_body_mode() -> None:
    reply = _roundtrip(mutations.headers_reply("response_headers", response_body_mode="streamed"))
    assert reply.mode_override.response_body_mode == pb.ProcessingMode.STREAMED
    # Unset fields stay DEFAULT, which Envoy reads as "no change".
    assert reply.mode_override.response_header_mode == pb.ProcessingMode.DEFAULT
    none = _roundtrip(mutations.headers_reply("response_headers", response_body_mode="none"))
    assert none.HasField("mode_override") and none.mode_override.response_body_mode == pb.ProcessingMode.NONE


def test_chunk_reply_clears_a_withheld_chunk() -> None:
    common = _roundtrip(mutations.chunk_reply("response_body", b"")).response_body.response
    assert common.body_mutation.WhichOneof("mutation") == "clear_body"
    assert not common.HasField("header_mutation")


def test_immediate_response_carries_status_type_and_body() -> None:
    reply = _roundtrip(
        mutations.immediate_response(422, b'{"error": {}}', set_headers={"x-truthlens-detected": "true"}, details="truthlens blocked")
    )
    immediate = reply.immediate_response
    assert immediate.status.code == 422
    assert immediate.body == b'{"error": {}}'
    assert _headers(immediate.headers) == {"content-type": "application/json", "x-truthlens-detected": "true"}
    assert immediate.details == "truthlens_blocked"  # one token in Envoy's access log
