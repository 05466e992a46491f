"""Responses API bodies: request reading (question, passages from each kind of input item, the
extension field stripped, chat messages for re-asks, errors by reason), response reading (one
answer per message item) and rendering (warnings, rewrites and annotations written back into
``output_text`` parts, the top-level ``output_text``, upstream verdicts dropped). Pure
functions; nothing is scripted. Shapes follow the ``openai`` package's ``types/responses``
models, which validate what is rendered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import Response

from truthlens.gateway.apis.chat.body import ContextSettings
from truthlens.gateway.apis.interface import BodyError, Rewrite, WarningSpec
from truthlens.gateway.apis.responses.body import (
    parse_responses_request,
    parse_responses_response,
    place_text,
)

CTX = ContextSettings()
WARN = WarningSpec("Careful: unverified.", "prepend")


def body(doc: object) -> bytes:
    return json.dumps(doc).encode()


def request(ctx: ContextSettings = CTX, **doc: Any) -> Any:
    return parse_responses_request(body({"model": "m", **doc}), ctx)


# ---------------------------------------------------------------- requests


def test_a_string_input_is_the_question_and_the_extension_field_is_stripped() -> None:
    req = request(input="Who designed it?", instructions="Be brief.", truthlens_context=["Doc A.", {"text": "Doc B."}],
                  temperature=0.2, top_p=0.9, max_output_tokens=64, stream=True)
    assert req.question == "Who designed it?"
    assert req.passages == ("Doc A.", "Doc B.")
    assert req.stream is True
    assert req.sampling == {"temperature": 0.2, "top_p": 0.9, "max_tokens": 64}
    assert req.messages == ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who designed it?"})
    forwarded = json.loads(req.forward_body)
    assert "truthlens_context" not in forwarded and forwarded["input"] == "Who designed it?"
    query = req.grounded_query()
    assert (query.model, query.question, query.passages) == ("m", "Who designed it?", ("Doc A.", "Doc B."))


ITEMS = [
    {"role": "developer", "content": "Answer from the documents.\n\nThe tower is 330 m tall."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first question"}]},
    {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "Tool passage."},
    {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "Part one."},
                                                                 {"type": "input_image", "image_url": "x"}]},
    {"type": "file_search_call", "id": "fs1", "status": "completed", "queries": ["q"],
     "results": [{"text": "Found passage.", "file_id": "f1", "filename": "a.txt", "score": 0.9}, {"text": " "}]},
    {"type": "reasoning", "id": "r1", "summary": []},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Earlier answer."}]},
    {"role": "user", "content": [{"type": "input_text", "text": "What"}, {"type": "input_file", "file_id": "f"},
                                 {"type": "input_text", "text": "now?"}]},
]


def test_tool_outputs_and_file_search_results_are_passages_and_the_last_user_input_is_the_question() -> None:
    req = request(input=ITEMS, instructions="You are helpful.")
    assert req.question == "What\nnow?"
    assert req.passages == ("Tool passage.", "Part one.", "Found passage.")
    # Re-asks get the conversation as chat messages: the instructions first, tool items left out
    # (their text is in the passages).
    assert [m["role"] for m in req.messages] == ["system", "developer", "user", "assistant", "user"]
    assert req.messages[3]["content"] == "Earlier answer."
    assert req.forward_body is None  # nothing to strip: the original body goes upstream


def test_system_context_reads_instructions_and_system_and_developer_messages() -> None:
    ctx = ContextSettings(tool_messages=False, system_messages=True)
    req = request(ctx, input=ITEMS, instructions="Paris is in France.\n\nIt is the capital.")
    assert req.passages == ("Paris is in France.", "It is the capital.", "Answer from the documents.",
                            "The tower is 330 m tall.")


def test_without_input_only_the_extension_field_grounds_the_request() -> None:
    req = request(previous_response_id="resp_1", truthlens_context=["Doc."])
    assert (req.question, req.passages, req.messages) == ("", ("Doc.",), ())


def test_an_extension_field_named_otherwise_or_unused() -> None:
    req = request(ContextSettings(extension_field=None), input="q", truthlens_context=["Doc."])
    assert req.passages == () and req.forward_body is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "malformed_json"),
        (b"[1, 2]", "not_an_object"),
        (body({"input": 42}), "bad_messages"),
        (body({"input": ["hi"]}), "bad_messages"),
        (body({"input": [{"type": "message", "content": "no role"}]}), "bad_messages"),
        (body({"input": [{"role": "user", "content": [{"type": "input_text", "text": 3}]}]}), "bad_messages"),
        (body({"input": [{"role": "user", "content": 7}]}), "bad_messages"),
        (body({"input": [{"type": "function_call_output", "output": {"x": 1}}]}), "bad_messages"),
        (body({"input": [{"type": "file_search_call", "results": "nope"}]}), "bad_messages"),
        (body({"input": "q", "model": 1}), "bad_field"),
        (body({"input": "q", "stream": "yes"}), "bad_field"),
        (body({"input": "q", "instructions": ["x"]}), "bad_field"),
        (body({"input": "q", "truthlens_context": 42}), "bad_context"),
    ],
)
def test_bad_requests_name_their_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(BodyError) as info:
        parse_responses_request(raw, CTX)
    assert info.value.reason == reason


def test_a_string_extension_field_is_one_passage() -> None:
    req = parse_responses_request(body({"input": "When?", "truthlens_context": "Completed in 1889."}), CTX)
    assert req.passages == ("Completed in 1889.",)
    assert req.forward_body is not None and "truthlens_context" not in json.loads(req.forward_body)


def test_a_body_over_the_limit_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(BodyError) as info:
        parse_responses_request(b"{" * 100, CTX, max_bytes=10)
    assert info.value.reason == "too_large"


# ---------------------------------------------------------------- responses


def response_doc(*items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": "m", "status": "completed",
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "output": list(items), **extra}


def message(item_id: str, *texts: str, annotations: list[Any] | None = None) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": t, "annotations": list(annotations or [])} for t in texts]}


CITATION = {"type": "url_citation", "start_index": 4, "end_index": 10, "title": "T", "url": "https://example.org"}


def test_each_message_item_is_an_answer_and_other_items_are_not() -> None:
    doc = response_doc({"id": "r", "type": "reasoning", "summary": []}, message("a", "One ", "two."),
                       {"id": "f", "type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"},
                       message("b", "Three."))
    resp = parse_responses_response(body(doc))
    assert resp.contents == ("One two.", "Three.")
    assert [m.position for m in resp.messages] == [1, 3]


@pytest.mark.parametrize(
    "doc",
    [
        [1],
        {"id": "x"},
        {"output": "nope"},
        {"output": [7]},
        {"output": [{"type": "message", "content": "text"}]},
        {"output": [{"type": "message", "content": [{"type": "output_text", "text": None}]}]},
        {"status": "failed", "error": {"code": "server_error", "message": "boom"}, "output": []},
    ],
)
def test_what_is_not_a_response_is_a_bad_response(doc: object) -> None:
    with pytest.raises(BodyError) as info:
        parse_responses_response(body(doc))
    assert info.value.reason == "bad_response"


def test_nothing_to_change_hands_back_the_original_bytes() -> None:
    raw = body(response_doc(message("a", "Fine.")))
    resp = parse_responses_response(raw)
    assert resp.render(Rewrite()) is raw
    assert resp.render(Rewrite(contents=[None])) is raw


def test_a_prepended_warning_goes_into_the_first_part_and_moves_its_annotations() -> None:
    doc = response_doc(message("a", "See example.", " More.", annotations=[CITATION]), output_text="See example. More.")
    out = json.loads(parse_responses_response(body(doc)).render(Rewrite(warning=WARN)))
    parts = out["output"][0]["content"]
    shift = len("Careful: unverified.\n\n")
    assert parts[0]["text"] == "Careful: unverified.\n\nSee example."
    assert parts[0]["annotations"][0]["start_index"] == 4 + shift and parts[0]["annotations"][0]["end_index"] == 10 + shift
    assert parts[0]["text"][parts[0]["annotations"][0]["start_index"]:parts[0]["annotations"][0]["end_index"]] == "exampl"
    assert parts[1]["text"] == " More." and parts[1]["annotations"] == [CITATION]
    assert out["output_text"] == "Careful: unverified.\n\nSee example. More."
    Response.model_validate(out)  # still a Response as the SDK reads it


def test_an_appended_warning_goes_into_the_last_part() -> None:
    resp = parse_responses_response(body(response_doc(message("a", "One.", " Two."))))
    out = json.loads(resp.render(Rewrite(warning=WarningSpec("Check.", "append"))))
    assert [p["text"] for p in out["output"][0]["content"]] == ["One.", " Two.\n\nCheck."]


def test_a_rewrite_replaces_the_text_and_drops_annotations_that_point_into_it() -> None:
    doc = response_doc(message("a", "Wrong part one.", " Wrong two.", annotations=[CITATION]), message("b", "Other."))
    out = json.loads(parse_responses_response(body(doc)).render(Rewrite(contents=["Fixed answer.", None])))
    parts = out["output"][0]["content"]
    assert [p["text"] for p in parts] == ["Fixed answer.", ""]
    assert parts[0]["annotations"] == [] and parts[1]["annotations"] == []
    assert out["output"][1]["content"][0]["text"] == "Other."
    assert "output_text" not in out  # the upstream sent none: none is invented


def test_only_flagged_answers_are_warned_and_the_upstream_verdict_is_dropped() -> None:
    doc = response_doc(message("a", "Clean."), message("b", "Flagged."), truthlens={"status": "clean"})
    out = json.loads(parse_responses_response(body(doc)).render(
        Rewrite(warning=WARN, warn_indices=frozenset({1}), details={"status": "detected"})))
    assert out["output"][0]["content"][0]["text"] == "Clean."
    assert out["output"][1]["content"][0]["text"] == "Careful: unverified.\n\nFlagged."
    assert out["truthlens"] == {"status": "detected"}
    unchanged = json.loads(parse_responses_response(body(doc)).render(Rewrite()))
    assert "truthlens" not in unchanged


def test_a_message_without_text_gets_a_text_part_for_its_warning() -> None:
    refusal = {"id": "a", "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "refusal", "refusal": "I cannot."}]}
    resp = parse_responses_response(body(response_doc(refusal)))
    assert resp.contents == ("",)
    out = json.loads(resp.render(Rewrite(warning=WARN)))
    assert out["output"][0]["content"][1] == {"type": "output_text", "text": "Careful: unverified.", "annotations": []}
    Response.model_validate(out)


@pytest.mark.parametrize(
    ("old", "new", "placed"),
    [
        (["ab", "cd"], "abcd", [("ab", 0), ("cd", 0)]),
        (["ab", "cd"], "W\n\nabcd", [("W\n\nab", 3), ("cd", 0)]),
        (["ab", "cd"], "abcd\n\nW", [("ab", 0), ("cd\n\nW", 0)]),
        (["ab", "cd"], "new", [("new", None), ("", None)]),
        ([""], "W", [("W", 1)]),
        ([], "W", []),
    ],
)
def test_place_text(old: list[str], new: str, placed: list[tuple[str, int | None]]) -> None:
    assert place_text(old, new) == placed


def test_text_parts_are_read_and_rewritten_as_the_answer_they_show() -> None:
    doc = response_doc({"id": "a", "type": "message", "role": "assistant", "status": "completed",
                        "content": [{"type": "text", "text": "Berlin is "}, {"type": "refusal", "refusal": "no"},
                                    {"type": "output_text", "text": "the capital.", "annotations": []}]})
    resp = parse_responses_response(body(doc))
    assert resp.contents == ("Berlin is the capital.",)
    out = json.loads(resp.render(Rewrite(warning=WARN)))
    assert out["output"][0]["content"][0] == {"type": "text", "text": "Careful: unverified.\n\nBerlin is "}
    assert out["output"][0]["content"][1] == {"type": "refusal", "refusal": "no"}


def test_a_top_level_output_text_that_says_something_else_is_an_answer_of_its_own() -> None:
    doc = response_doc(message("a", "Paris is the capital."), output_text="Berlin is the capital.")
    resp = parse_responses_response(body(doc))
    assert resp.divergent
    assert resp.contents == ("Paris is the capital.", "Berlin is the capital.")
    # Only the divergent text flagged: the warning goes on it alone, output[] stays.
    out = json.loads(resp.render(Rewrite(warning=WARN, warn_indices=frozenset({1}))))
    assert out["output_text"] == "Careful: unverified.\n\nBerlin is the capital."
    assert out["output"][0]["content"][0]["text"] == "Paris is the capital."
    # A rewrite of it replaces only it.
    out = json.loads(resp.render(Rewrite(contents=[None, "Paris is the capital."])))
    assert out["output_text"] == "Paris is the capital."


def test_a_top_level_output_text_that_agrees_is_not_read_twice() -> None:
    doc = response_doc(message("a", "Paris ", "is the capital."), output_text="Paris is the capital.")
    resp = parse_responses_response(body(doc))
    assert not resp.divergent and resp.contents == ("Paris is the capital.",)
    out = json.loads(resp.render(Rewrite(warning=WARN)))
    assert out["output_text"] == "Careful: unverified.\n\nParis is the capital."
