"""A model reply that holds no claim of an answer ("OK", a verdict word, a JSON verdict object) is
never used as one: standard keeps the flagged original with its warning, premium counts such a
verifier as failed (all failed: the detector's verdict, warned), and neither calls it
``rewritten``. A reply that is a real answer still is shipped as ``rewritten``.

Real: the shipped detector in ONNX Runtime, HTTP, the LLM client. Scripted: the upstream LLM's
replies (every call answered the same way)."""

from __future__ import annotations

import json

import pytest
from shipped_inputs import PAVILION_CONTEXT, PAVILION_QUESTION

from truthlens.detector.types import Detector
from truthlens.modes import premium, standard
from truthlens.modes.base import Services
from truthlens.modes.premium import PremiumOptions
from truthlens.modes.prompts import REFINE_MARKER, REFINE_SYSTEM
from truthlens.modes.revisions import why_not_an_answer
from truthlens.modes.standard import StandardOptions
from truthlens.testing.upstream import ScriptedUpstream

from .conftest import CONTEXT, QUESTION, exchange, score
from .test_premium import (
    PRIMARY,
    TWO,
    VERIFIER_A,
    VERIFIER_B,
    premium_exchange,
    verifiers,
)

in_module_loop = pytest.mark.asyncio(loop_scope="module")

WRONG = "The Eiffel Tower was completed in 1925 and is 120 metres tall."
FIXED = "The Eiffel Tower was completed in 1889 and is 330 metres tall."
VERDICT_OBJECT = json.dumps({"verdict": "SUPPORTED", "supported": True})
# Replies of the class, beyond the two of the adversarial notes ("OK", the verdict object).
CLAIM_FREE = ["OK", "Done.", "SUPPORTED", "Acknowledged.", "Sure, happy to help!", "Looks good to me.",
              "N/A", "true", "The answer is correct.", "ok, noted 👍"]


@pytest.mark.parametrize("reply", CLAIM_FREE)
def test_a_reply_with_no_claim_is_named(reply: str) -> None:
    assert why_not_an_answer(reply, original=WRONG, question=QUESTION, passages=CONTEXT,
                             instructions=(REFINE_SYSTEM,)) == "no_claim"


@pytest.mark.parametrize("reply", [FIXED, "1889.", "Completed in 1889; 330 m.", "It stands in Paris.",
                                   "The context does not say how tall it is."])
def test_short_real_answers_still_pass(reply: str) -> None:
    assert why_not_an_answer(reply, original=WRONG, question=QUESTION, passages=CONTEXT,
                             instructions=(REFINE_SYSTEM,)) is None


@in_module_loop
@pytest.mark.parametrize(("reply", "why"), [("OK", "no_claim"), (VERDICT_OBJECT, "json")])
async def test_standard_keeps_the_flagged_answer_when_the_refinement_is_no_answer(
        detector: Detector, upstream: ScriptedUpstream, services: Services, reply: str, why: str) -> None:
    first = await score(detector, WRONG)
    assert first.status == "detected"
    upstream.set_rules([{"name": "any", "match": {}, "reply": {"content": reply}}])
    verdict = await standard.build().run(exchange([WRONG], mode="standard", options=StandardOptions()), services)
    choice = verdict.choices[0]
    assert not verdict.rewritten and choice.text is None
    assert choice.detection.status == "detected" and choice.detection.score == pytest.approx(first.score, abs=1e-6)
    assert verdict.attributes["standard.stop"] == (f"not_an_answer:{why}",)


@in_module_loop
async def test_standard_ships_a_real_answer_as_rewritten(detector: Detector, upstream: ScriptedUpstream,
                                                         services: Services) -> None:
    first, fixed = await score(detector, WRONG), await score(detector, FIXED)
    assert first.status == "detected" and fixed.status == "clean", (first, fixed)
    upstream.set_rules([{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": FIXED}}])
    verdict = await standard.build().run(exchange([WRONG], mode="standard", options=StandardOptions()), services)
    choice = verdict.choices[0]
    assert verdict.rewritten and choice.text == FIXED
    assert choice.detection.status == "clean" and choice.original is not None
    assert choice.original.status == "detected"
    assert verdict.attributes["standard.stop"] == ("converged",)


@in_module_loop
@pytest.mark.parametrize("reply", ["OK", VERDICT_OBJECT])
async def test_premium_never_rewrites_with_claim_free_replies(
        detector: Detector, upstream: ScriptedUpstream, services: Services, reply: str) -> None:
    # Every call answers the same: the verifiers' answers, their verdicts and the judge's synthesis.
    upstream.set_rules([{"name": "any", "match": {}, "reply": {"content": reply}}])
    options = PremiumOptions(verification_models=("verifier-a", "verifier-b"), judge_model="judge")
    verdict = await premium.build().run(exchange([WRONG], mode="premium", options=options), services)
    choice = verdict.choices[0]
    assert not verdict.rewritten and choice.text is None
    assert choice.detection.status == "detected"  # the detector's verdict on the upstream answer, warned
    assert verdict.attributes["premium.fallback"] == "all_verifiers_failed"
    assert all(f.endswith(":not_an_answer") for f in verdict.attributes["premium.verifiers_failed"])


@in_module_loop
@pytest.mark.parametrize("judge_reply", ["OK", VERDICT_OBJECT])
async def test_premium_keeps_the_hybrid_when_the_judges_synthesis_is_no_answer(
        upstream: ScriptedUpstream, services: Services, judge_reply: str) -> None:
    # The verifiers answer (one disputes the primary's designer); the judge replies with no claim.
    upstream.set_rules(verifiers({"content": VERIFIER_A}, {"content": VERIFIER_B}, judge={"content": judge_reply}))
    options = PremiumOptions(verification_models=TWO.verification_models, judge_model="judge")
    verdict = await premium.build().run(premium_exchange([PRIMARY], options), services)
    (judge,) = verdict.attributes["premium.judge"]
    assert judge.startswith("failed:not_an_answer:"), judge
    choice = verdict.choices[0]
    assert choice.text != judge_reply  # the judge's reply is never the answer
    assert choice.text is None or why_not_an_answer(choice.text, original=PRIMARY, question=PAVILION_QUESTION,
                                                    passages=(PAVILION_CONTEXT,), instructions=()) is None
