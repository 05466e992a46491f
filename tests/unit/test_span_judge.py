"""The scripted upstream's span judge (``truthlens.testing.span_judge``): it answers generative
span-detection requests as an OpenAI-compatible server with structured outputs would.

Scripted part: the upstream itself (the test double under test). Real: HTTP (aiohttp), the
``llm`` backend's own prompt builder and schema (``truthlens.detector.backends.llm_prompt``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp
import pytest

from truthlens.detector.backends.llm_prompt import RESPONSE_FORMAT, messages, read_quotes
from truthlens.testing.script import ScriptError, parse_script
from truthlens.testing.span_judge import unsupported_quotes
from truthlens.testing.upstream import ScriptedUpstream

CONTEXT = ["The Harbour Pavilion in Rotterdam was designed by Antoni Gaudi and opened in 1998."]
ANSWER = "The Harbour Pavilion opened in 2004. Isambard Brunel designed it, and in 2004 it won a prize."


def body(response_format: Any = RESPONSE_FORMAT, answer: str = ANSWER) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "judge", "messages": messages(CONTEXT, "Who designed it?", answer)}
    if response_format is not None:
        out["response_format"] = response_format
    return out


async def post(up: ScriptedUpstream, payload: dict[str, Any]) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{up.base_url}/chat/completions", json=payload) as r:
            return r.status, await r.json()


def content(reply: Any) -> str:
    return str(reply["choices"][0]["message"]["content"])


async def test_a_spans_schema_request_no_rule_claims_is_judged_in_the_schemas_shape() -> None:
    async with ScriptedUpstream() as up:
        status, reply = await post(up, body())
        assert up.calls[0].rule == "span_judge"
    assert status == 200 and reply["object"] == "chat.completion"
    # Numbers and names the context lacks, as often as they occur, in answer order.
    assert read_quotes(content(reply)) == ["2004", "Isambard Brunel", "2004"]


async def test_rules_come_first_and_can_bend_the_judges_answer() -> None:
    rules = [
        {"match": {"any": "plain rule"}, "reply": {"content": "a scripted reply"}},
        {"match": {"model": "judge"}, "reply": {"span_judge": {"quotes": ["Isambard Brunel"],
                                                               "extra_quotes": ["Gustave Eiffel"]}}},
    ]
    async with ScriptedUpstream(rules) as up:
        _, plain = await post(up, body(answer="plain rule: " + ANSWER))
        _, bent = await post(up, body())
    assert content(plain) == "a scripted reply"
    assert read_quotes(content(bent)) == ["Isambard Brunel", "Gustave Eiffel"]


async def test_without_the_schema_the_judge_answers_as_a_model_asked_nothing_else_would() -> None:
    rules = [{"match": {"model": "judge"}, "reply": {"span_judge": True}}]
    async with ScriptedUpstream(rules) as up:
        _, prose = await post(up, body(response_format=None))
        _, other_json = await post(up, body(response_format={"type": "json_object"}))
        _, malformed = await post(up, body())
        up.set_rules([{"match": {"model": "judge"}, "reply": {"span_judge": {"malformed": True}}}])
        _, cut = await post(up, body())
    assert "Isambard Brunel" in content(prose)
    with pytest.raises(ValueError):
        read_quotes(content(prose))
    assert json.loads(content(other_json)) == {"unsupported": ["2004", "Isambard Brunel", "2004"]}
    with pytest.raises(ValueError):
        read_quotes(content(other_json))  # JSON, but not the schema's object
    assert read_quotes(content(malformed))  # the rule alone changes nothing
    with pytest.raises(ValueError):
        read_quotes(content(cut))


@pytest.mark.parametrize(
    "break_schema",
    [
        lambda s: s["items"].pop("additionalProperties"),
        lambda s: s["items"].__setitem__("required", []),
        lambda s: s["items"]["properties"].__setitem__("why", {"type": "string"}),
    ],
)
async def test_a_strict_schema_that_breaks_openais_rules_is_refused(break_schema: Any) -> None:
    fmt = copy.deepcopy(RESPONSE_FORMAT)
    break_schema(fmt["json_schema"]["schema"]["properties"]["spans"])
    async with ScriptedUpstream() as up:
        status, reply = await post(up, body(response_format=fmt))
    assert status == 400 and reply["error"]["type"] == "invalid_request_error"
    assert "Invalid schema for response_format" in reply["error"]["message"]


def test_sentence_openers_are_words_and_names_are_names() -> None:
    data = {"context": ["It was built in Paris by Gustave Eiffel in 1889."],
            "answer": "In 1889 Gustave Eiffel built it. The Tower stands in Berlin. It cost 7,799,401 francs."}
    assert unsupported_quotes(data) == ["The Tower", "Berlin", "7,799,401"]
    assert unsupported_quotes(None) == [] and unsupported_quotes({"context": []}) == []


@pytest.mark.parametrize("judge", [{"quotes": "x"}, {"extra_quotes": [1]}, {"malformed": "yes"}, {"mood": 1}, 3])
def test_a_bad_span_judge_script_names_the_key(judge: object) -> None:
    with pytest.raises(ScriptError, match=r"rules\[0\]\.reply\.span_judge"):
        parse_script([{"reply": {"span_judge": judge}}])
