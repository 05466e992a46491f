"""The scripted upstream's ``verdicts`` reply: claim verdicts for premium's verdict prompt.

Scripted part: the upstream itself (the test double under test). Real: HTTP (aiohttp), the
prompt builder and the strict verdict parser premium uses.
"""

from __future__ import annotations

import aiohttp
import pytest

from truthlens.modes.prompts import VERDICT_MARKER, parse_verdicts, verdict_messages
from truthlens.testing.script import ScriptError, parse_script
from truthlens.testing.upstream import ScriptedUpstream

CLAIMS = ["It was designed by Isambard Brunel.", "It is in Rotterdam.", "It is 40 metres long."]


async def _ask(up: ScriptedUpstream, messages: list[dict[str, str]]) -> str:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{up.base_url}/chat/completions", json={"model": "v", "messages": messages}) as r:
            body = await r.json()
    return str(body["choices"][0]["message"]["content"])


async def test_verdicts_answer_each_quoted_claim_by_the_first_key_it_contains() -> None:
    rule = {"name": "v", "match": {"user": VERDICT_MARKER},
            "reply": {"verdicts": {"Brunel": "refuted", "metres": "unknown", "*": "supported"}}}
    async with ScriptedUpstream([rule]) as up:
        text = await _ask(up, verdict_messages("Who designed it?", "Gaudi did.", CLAIMS))
        assert parse_verdicts(text, 3) == ("refuted", "supported", "unknown")
        # A request without quoted claims gets a reply that is no verdict at all.
        plain = await _ask(up, [{"role": "user", "content": f"{VERDICT_MARKER}, but nothing quoted"}])
        assert parse_verdicts(plain, 1) == ("unknown",)


@pytest.mark.parametrize("verdicts", [{"Brunel": "wrong"}, ["refuted"], {"x": 1}])
def test_a_bad_verdicts_script_names_the_key(verdicts: object) -> None:
    with pytest.raises(ScriptError, match=r"rules\[0\]\.reply\.verdicts"):
        parse_script([{"reply": {"verdicts": verdicts}}])
