"""Premium mode (cross-model consensus) with the real detector and scripted verifiers.

Real: the shipped detector in ONNX Runtime (also as the entailment checker), HTTP, the LLM
client. Scripted: the verifier and judge models' answers (one script per test). Where a test
relies on a judgement of the detector, it checks that judgement first and says so.
"""

from __future__ import annotations

import time

import pytest
from shipped_inputs import (
    PAVILION_CONTEXT,
    PAVILION_JUDGED,
    PAVILION_PRIMARY,
    PAVILION_QUESTION,
    PAVILION_VERIFIER,
    PAVILION_WRONG_CLAIM,
)

from truthlens.detector.types import Detection, Detector
from truthlens.modes import premium
from truthlens.modes.base import Exchange, Services
from truthlens.modes.claims import align, segment
from truthlens.modes.premium import DEFAULT_ABSTAIN, PremiumOptions
from truthlens.modes.prompts import CONTEXT_MARKER, DEBATE_MARKER, JUDGE_MARKER, VERDICT_MARKER
from truthlens.modes.quoting import read_data
from truthlens.options import ConfigError, OptionContext
from truthlens.testing.upstream import ScriptedUpstream

from .conftest import exchange
from .conftest import score as score_in

in_module_loop = pytest.mark.asyncio(loop_scope="module")

# A made-up building: the context is the only truth, so no model knowledge interferes.
CONTEXT = (PAVILION_CONTEXT,)
QUESTION = PAVILION_QUESTION
PRIMARY = PAVILION_PRIMARY
WRONG_CLAIM = PAVILION_WRONG_CLAIM
VERIFIER_A = PAVILION_VERIFIER
VERIFIER_B = "The pavilion is on the Rotterdam waterfront. It was designed by Antoni Gaudi. It is 40 metres long."
VERIFIER_B_OTHER_NAME = ("The pavilion is on the Rotterdam waterfront. It was designed by Zaha Hadid. "
                         "It is 40 metres long.")
JUDGED = PAVILION_JUDGED
MODE = premium.build()
TWO = PremiumOptions(verification_models=("verifier-a", "verifier-b"))


async def score(detector: Detector, answer: str, context: tuple[str, ...] = CONTEXT) -> Detection:
    return await score_in(detector, answer, context=context, question=QUESTION)


def premium_exchange(answers: list[str], options: PremiumOptions, budget_s: float = 20.0) -> Exchange:
    return exchange(answers, mode="premium", options=options, passages=CONTEXT, question=QUESTION, budget_s=budget_s)


# Each verifier's verdicts on the claims it is asked about (premium's verdict prompt): a model
# whose answer names another designer refutes the claim that Brunel (or that other one) designed it.
REFUTES_BRUNEL = {"Brunel": "refuted", "*": "supported"}


def verdict_rules(a: dict[str, str] | None = None, b: dict[str, str] | None = None) -> list[dict[str, object]]:
    return [{"name": f"{m}-verdicts", "match": {"model": f"verifier-{m}", "user": VERDICT_MARKER},
             "reply": {"verdicts": v or REFUTES_BRUNEL}} for m, v in (("a", a), ("b", b))]


def verifiers(a: dict[str, object], b: dict[str, object],
              judge: dict[str, object] | None = None) -> list[dict[str, object]]:
    rules = [*verdict_rules(),
             {"name": "a", "match": {"model": "verifier-a"}, "reply": a},
             {"name": "b", "match": {"model": "verifier-b"}, "reply": b}]
    if judge is not None:
        rules.append({"name": "judge", "match": {"model": "judge"}, "reply": judge})
    return rules


async def supported(detector: Detector, claim: str, by: str) -> bool:
    d = await score(detector, claim, context=(by,))
    assert d.score is not None
    return d.score < 0.5


async def expected_replacement(detector: Detector, *answers: str) -> str:
    """The wrong claim's aligned segment in the best-grounded of ``answers``, per the detector."""
    scored = [((await score(detector, a)).score, a) for a in answers]
    best = min(scored, key=lambda x: x[0] if x[0] is not None else 2.0)[1]
    aligned, _ = align(segment(WRONG_CLAIM)[0], segment(best))
    assert aligned is not None
    return aligned.text


@in_module_loop
async def test_disagreeing_segment_is_replaced_by_the_most_reliable_verifier(
        detector: Detector, upstream: ScriptedUpstream, services: Services) -> None:
    for v in (VERIFIER_A, VERIFIER_B):
        assert not await supported(detector, WRONG_CLAIM, v), "the detector should see Brunel contradict Gaudi"
        for claim in (s.text for s in segment(PRIMARY) if s.text != WRONG_CLAIM):
            assert await supported(detector, claim, v), f"the detector should find {claim!r} in {v!r}"
    replacement = await expected_replacement(detector, VERIFIER_A, VERIFIER_B)
    upstream.set_rules(verifiers({"content": VERIFIER_A}, {"content": VERIFIER_B}))
    # Extra rounds are allowed but not needed: the first round's answer is already clean.
    options = PremiumOptions(verification_models=TWO.verification_models, max_iterations=3)
    verdict = await MODE.run(premium_exchange([PRIMARY], options), services)
    hybrid = PRIMARY.replace(WRONG_CLAIM, replacement)
    primary_d, hybrid_d = await score(detector, PRIMARY), await score(detector, hybrid)
    assert hybrid_d.score is not None and primary_d.score is not None and hybrid_d.score < primary_d.score
    choice = verdict.choices[0]
    assert choice.text == hybrid
    assert choice.detection.score == pytest.approx(hybrid_d.score, abs=1e-6)
    assert choice.detection.status == "clean" and verdict.iterations == 1
    assert verdict.attributes["premium.replaced"] == (1,) and verdict.attributes["premium.removed"] == (0,)
    assert verdict.headers["x-truthlens-verifiers"] == "2/2"
    assert verdict.headers["x-truthlens-consensus"] == "true"  # both verifiers agree on Gaudi
    calls = {c.model: c for c in upstream.calls if c.rule in ("a", "b")}
    assert set(calls) == {"verifier-a", "verifier-b"}
    for call in calls.values():  # same request, the out-of-band passages added as quoted context
        assert call.messages[0]["role"] == "user" and CONTEXT_MARKER in call.messages[0]["content"]
        assert read_data(call.messages[0]["content"]) == {"context": list(CONTEXT)}
        assert call.messages[1:] == ({"role": "user", "content": QUESTION},)
    # Each verifier judged the primary's claims against its own answer, the other one the replacement.
    judged = [c.rule for c in upstream.calls if c.rule.endswith("-verdicts")]
    assert len(judged) == 3 and set(judged) == {"a-verdicts", "b-verdicts"}


@in_module_loop
async def test_a_later_round_lets_the_verifiers_critique_the_answer(
        detector: Detector, upstream: ScriptedUpstream, services: Services) -> None:
    echo = PRIMARY.replace("is in", "stands in")  # round 1: both verifiers repeat the wrong designer
    assert await supported(detector, WRONG_CLAIM, echo), "the detector should find Brunel in an answer saying Brunel"
    primary_d = await score(detector, PRIMARY)
    assert primary_d.detected, "the detector should flag Brunel against a context saying Gaudi"
    replacement = await expected_replacement(detector, VERIFIER_A, VERIFIER_B)
    upstream.set_rules([
        {"name": "a-debate", "match": {"model": "verifier-a", "any": DEBATE_MARKER}, "reply": {"content": VERIFIER_A}},
        {"name": "b-debate", "match": {"model": "verifier-b", "any": DEBATE_MARKER}, "reply": {"content": VERIFIER_B}},
        *verifiers({"content": echo}, {"content": echo}),
    ])
    options = PremiumOptions(verification_models=TWO.verification_models, max_iterations=3)
    verdict = await MODE.run(premium_exchange([PRIMARY], options), services)
    assert verdict.choices[0].text == PRIMARY.replace(WRONG_CLAIM, replacement)
    assert verdict.iterations == 2  # round 2 made it clean: no third round
    assert [c.rule for c in upstream.calls].count("a-debate") == 1
    debate = next(c for c in upstream.calls if c.rule == "a-debate")
    prompt = debate.messages[1]["content"]
    assert PRIMARY in prompt and CONTEXT[0] in prompt


@in_module_loop
async def test_a_failed_verifier_is_counted_and_does_not_fail_the_exchange(
        detector: Detector, upstream: ScriptedUpstream, services: Services) -> None:
    assert not await supported(detector, WRONG_CLAIM, VERIFIER_A)
    upstream.set_rules(verifiers({"content": VERIFIER_A}, {"status": 500}))
    verdict = await MODE.run(premium_exchange([PRIMARY], TWO), services)
    assert verdict.attributes["premium.verifiers_failed"] == ("verifier-b:http_5xx",)
    assert verdict.attributes["premium.verifiers_ok"] == ("verifier-a",)
    assert verdict.headers["x-truthlens-verifiers"] == "1/2"
    assert verdict.choices[0].text == PRIMARY.replace(WRONG_CLAIM, await expected_replacement(detector, VERIFIER_A))
    # Primary against one verifier is a tie: the claim was replaced, but without a majority.
    assert verdict.headers["x-truthlens-consensus"] == "false"


@in_module_loop
async def test_all_verifiers_failing_falls_back_to_detection_only(
        detector: Detector, upstream: ScriptedUpstream, services: Services) -> None:
    upstream.set_rules(verifiers({"status": 503}, {"raw_body": "{broken"}))
    verdict = await MODE.run(premium_exchange([PRIMARY], TWO), services)
    own = await score(detector, PRIMARY)
    assert verdict.choices[0].text is None
    assert verdict.choices[0].detection.score == pytest.approx(own.score, abs=1e-6)
    assert verdict.attributes["premium.fallback"] == "all_verifiers_failed"
    assert verdict.attributes["premium.verifiers_failed"] == ("verifier-a:http_5xx", "verifier-b:bad_response")
    assert verdict.iterations == 0


@in_module_loop
async def test_slow_verifiers_leave_the_budget_intact(upstream: ScriptedUpstream, services: Services) -> None:
    upstream.set_rules(verifiers({"content": VERIFIER_A, "delay_s": 30}, {"content": VERIFIER_B, "delay_s": 30}))
    ex = premium_exchange([PRIMARY], TWO, budget_s=3.0)
    verdict = await MODE.run(ex, services)
    assert time.monotonic() <= ex.deadline
    assert verdict.attributes["premium.fallback"] == "all_verifiers_failed"
    assert verdict.choices[0].detection.status != "unavailable"  # the primary was still checked


@in_module_loop
async def test_no_majority_abstains_or_warns_when_consensus_is_required(
        detector: Detector, upstream: ScriptedUpstream, services: Services) -> None:
    a_claim = "It was designed by Antoni Gaudi."
    assert not await supported(detector, a_claim, VERIFIER_B_OTHER_NAME), "Gaudi vs Hadid should disagree"
    assert not await supported(detector, WRONG_CLAIM, VERIFIER_B_OTHER_NAME), "Brunel vs Hadid should disagree"
    a_d, b_d = await score(detector, VERIFIER_A), await score(detector, VERIFIER_B_OTHER_NAME)
    assert a_d.score is not None and b_d.score is not None and a_d.score < b_d.score, "Gaudi is the context's"
    upstream.set_rules(verifiers({"content": VERIFIER_A}, {"content": VERIFIER_B_OTHER_NAME}))
    abstain = PremiumOptions(verification_models=TWO.verification_models, require_consensus=True,
                             on_no_consensus="abstain")
    verdict = await MODE.run(premium_exchange([PRIMARY], abstain), services)
    assert verdict.abstain_message == DEFAULT_ABSTAIN
    assert verdict.headers["x-truthlens-consensus"] == "false"
    warn = PremiumOptions(verification_models=TWO.verification_models, require_consensus=True)
    warned = await MODE.run(premium_exchange([PRIMARY], warn), services)
    assert warned.abstain_message is None
    assert warned.choices[0].detection.status == "detected"
    assert warned.status == "detected"


@in_module_loop
async def test_judge_synthesises_from_the_claims_on_dispute_only(
        detector: Detector, upstream: ScriptedUpstream, services: Services) -> None:
    judged, primary_d = await score(detector, JUDGED), await score(detector, PRIMARY)
    assert judged.score is not None and primary_d.score is not None and judged.score < primary_d.score
    upstream.set_rules(verifiers({"content": VERIFIER_A}, {"content": VERIFIER_B}, judge={"content": JUDGED}))
    with_judge = PremiumOptions(verification_models=TWO.verification_models, judge_model="judge")
    verdict = await MODE.run(premium_exchange([PRIMARY], with_judge), services)
    assert verdict.choices[0].text == JUDGED
    assert verdict.attributes["premium.judge"] == ("ok",)
    (judge_call,) = upstream.calls_for("judge")
    prompt = judge_call.messages[1]["content"]
    data = read_data(prompt)
    assert JUDGE_MARKER in prompt and data is not None and data["context"] == list(CONTEXT)
    assert [d["primary"] for d in data["disputed_claims"]] == [WRONG_CLAIM]
    # A correct primary answer that the verifiers share needs no judge and no rewrite.
    upstream.set_rules(verifiers({"content": VERIFIER_A}, {"content": VERIFIER_A}, judge={"content": JUDGED}))
    agreed = await MODE.run(premium_exchange([VERIFIER_A], with_judge), services)
    assert agreed.choices[0].text is None
    assert agreed.attributes["premium.judge"] == ("not_needed",)
    assert upstream.calls_for("judge") == []


def test_options_parse_and_errors_name_the_key() -> None:
    ctx = OptionContext(path="hallucination.premium", models=frozenset({"verifier-a", "verifier-b", "judge"}))
    opts = premium.parse_options({"verification_models": ["verifier-a", "verifier-b"], "judge_model": "judge",
                                  "require_consensus": True, "on_no_consensus": "abstain"}, ctx)
    assert opts.verification_models == ("verifier-a", "verifier-b") and opts.judge_model == "judge"
    assert opts.require_consensus and opts.on_no_consensus == "abstain" and opts.max_iterations == 1
    for raw, key in [({}, "verification_models"), ({"verification_models": []}, "verification_models"),
                     ({"verification_models": ["verifier-a", "ghost"]}, "verification_models[1]"),
                     ({"verification_models": ["verifier-a"], "judge_model": "ghost"}, "judge_model"),
                     ({"verification_models": ["verifier-a"], "on_no_consensus": "panic"}, "on_no_consensus"),
                     ({"verification_models": ["verifier-a"], "require_consensus": "yes"}, "require_consensus"),
                     ({"verification_models": ["verifier-a"], "max_iterations": 11}, "max_iterations"),
                     ({"verification_models": ["verifier-a"], "judges": "x"}, "judges")]:
        with pytest.raises(ConfigError) as err:
            premium.parse_options(raw, ctx)
        assert err.value.key == f"{ctx.path}.{key}"


@pytest.mark.parametrize("raw, key", [
    ({"verification_models": "verifier-a"}, "verification_models"),
    ({"verification_models": [3]}, "verification_models[0]"),
    ({"verification_models": ["verifier-a", "verifier-a"]}, "verification_models"),
    ({"verification_models": ["verifier-a"], "always_verify": 1}, "always_verify"),
    ({"verification_models": ["verifier-a"], "abstain_message": 5}, "abstain_message"),
    ({"verification_models": ["verifier-a"], "abstain_message": "  "}, "abstain_message"),
    ({"verification_models": ["verifier-a"], "verify_temperature": "cold"}, "verify_temperature"),
    ({"verification_models": ["verifier-a"], "max_iterations": 1.5}, "max_iterations"),
    ({"verification_models": ["verifier-a"], "judge_model": ["judge"]}, "judge_model"),
])
def test_a_wrong_option_type_is_a_config_error_naming_the_key(raw: dict[str, object], key: str) -> None:
    ctx = OptionContext(path="hallucination.premium", models=frozenset({"verifier-a", "judge"}))
    with pytest.raises(ConfigError) as err:
        premium.parse_options(raw, ctx)
    assert err.value.key == f"{ctx.path}.{key}"
