"""Premium says ``unreadable`` — not ``disagree`` — when the verifiers' verdicts cannot be read,
reports each such reply (WARNING + ``unreadable`` outcome), and asks for the verdicts as
structured output. Real: the shipped detector in ONNX Runtime, HTTP, the LLM client. Scripted:
the verifier models (prose instead of the verdict JSON, then the JSON)."""

from __future__ import annotations

import logging

import pytest
from shipped_inputs import PAVILION_CONTEXT, PAVILION_PRIMARY, PAVILION_QUESTION

from truthlens.modes import premium
from truthlens.modes.base import Services
from truthlens.modes.premium import PremiumOptions
from truthlens.modes.prompts import VERDICT_MARKER, VERDICT_SYSTEM
from truthlens.testing.upstream import ScriptedUpstream

from .conftest import exchange

in_module_loop = pytest.mark.asyncio(loop_scope="module")
OPTIONS = PremiumOptions(verification_models=("verifier-a", "verifier-b"))


def rules(verdict_reply: dict[str, object]) -> list[dict[str, object]]:
    return [
        {"name": "verdicts", "match": {"user": VERDICT_MARKER}, "reply": verdict_reply},
        {"name": "answer", "match": {}, "reply": {"content": PAVILION_PRIMARY}},
    ]


@in_module_loop
async def test_unreadable_verdicts_say_unreadable_and_are_reported(
        upstream: ScriptedUpstream, services: Services, caplog: pytest.LogCaptureFixture) -> None:
    upstream.set_rules(rules({"content": "The first claim is right, I think."}))
    caplog.set_level(logging.WARNING, logger="truthlens.llm")
    verdict = await premium.build().run(exchange([PAVILION_PRIMARY], mode="premium", options=OPTIONS,
                                                 passages=(PAVILION_CONTEXT,), question=PAVILION_QUESTION), services)
    assert verdict.headers["x-truthlens-consensus"] == "false"
    assert verdict.headers["x-truthlens-consensus-reason"] == "unreadable"
    assert verdict.attributes["premium.verdicts_unreadable"] == ("verifier-a", "verifier-b")
    warnings = [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()]
    assert any("model=verifier-a role=verdict" in w for w in warnings)
    assert all("I think" not in w for w in warnings)  # no bodies in the log
    # Asked as structured output (the scripted server honours json_schema), with no example to copy.
    verdict_calls = [c for c in upstream.calls if c.rule == "verdicts"]
    assert verdict_calls and all(c.params["response_format"]["type"] == "json_schema" for c in verdict_calls)
    assert all(c.params["max_tokens"] == 256 for c in verdict_calls)  # the verdict role's bound
    assert '"supported"}' not in VERDICT_SYSTEM and "{" not in VERDICT_SYSTEM


@in_module_loop
async def test_readable_verdicts_that_agree_give_consensus(upstream: ScriptedUpstream, services: Services) -> None:
    upstream.set_rules(rules({"verdicts": {"*": "supported"}}))
    verdict = await premium.build().run(exchange([PAVILION_PRIMARY], mode="premium", options=OPTIONS,
                                                 passages=(PAVILION_CONTEXT,), question=PAVILION_QUESTION), services)
    assert verdict.headers["x-truthlens-consensus"] == "true"
    assert "x-truthlens-consensus-reason" not in verdict.headers
    assert verdict.attributes["premium.verdicts_unreadable"] == ()
