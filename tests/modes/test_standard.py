"""Standard mode (self-refine) with the real detector and a scripted upstream.

Real: the shipped detector in ONNX Runtime, HTTP, the LLM client. Scripted: the upstream LLM's
refine answers (one script per test). Thresholds are set from the detector's own scores of
the texts involved, so the tests check the loop's logic, not one model's exact numbers.
"""

from __future__ import annotations

import time

import pytest

from truthlens.detector.types import Detector
from truthlens.modes import standard
from truthlens.modes.base import Services
from truthlens.modes.prompts import REFINE_MARKER
from truthlens.modes.quoting import read_data
from truthlens.modes.standard import StandardOptions
from truthlens.options import ConfigError, OptionContext
from truthlens.testing.upstream import ScriptedUpstream

from .conftest import CONTEXT, QUESTION, exchange, score

# The detector and the upstream live for the module; so does the event loop they are bound to.
in_module_loop = pytest.mark.asyncio(loop_scope="module")

WRONG = "The Eiffel Tower was completed in 1925 and is 120 metres tall."
FIXED = "The Eiffel Tower was completed in 1889 and is 330 metres tall."
WORSE = WRONG + " It was designed by Leonardo da Vinci and is made of solid gold."  # keeps the errors, adds more
MODE = standard.build()


async def threshold_between(detector: Detector, bad: str, good: str) -> float:
    """A threshold that flags ``bad`` and passes ``good``; fails if the detector cannot tell them apart."""
    b, g = await score(detector, bad), await score(detector, good)
    assert b.score is not None and g.score is not None
    assert b.score > g.score + 0.05, f"the shipped detector should rank {bad!r} ({b.score}) above {good!r} ({g.score})"
    return (b.score + g.score) / 2


def refine_rule(**reply: object) -> list[dict[str, object]]:
    return [{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": reply}]


@in_module_loop
async def test_refine_that_fixes_the_span_is_taken(detector: Detector, upstream: ScriptedUpstream,
                                                   services: Services) -> None:
    t = await threshold_between(detector, WRONG, FIXED)
    first = await score(detector, WRONG, threshold=t)
    fixed = await score(detector, FIXED, threshold=t)
    upstream.set_rules(refine_rule(content=FIXED))
    verdict = await MODE.run(exchange([WRONG], mode="standard", options=StandardOptions(), threshold=t,
                                      sampling={"max_tokens": 200}), services)
    choice = verdict.choices[0]
    assert choice.text == FIXED
    assert choice.detection.status == "clean"
    assert choice.detection.score == pytest.approx(fixed.score, abs=1e-6)
    assert verdict.iterations == 1 and verdict.status == "clean"
    assert verdict.attributes["standard.stop"] == ("converged",)
    (call,) = upstream.calls
    assert call.model == "primary" and call.rule == "refine"
    assert call.params["temperature"] == 0.0 and call.params["max_tokens"] == 200
    # The question, context, answer and spans arrive as the quoted data block of the user message.
    assert call.messages[0]["role"] == "system" and call.messages[1]["role"] == "user"
    data = read_data(call.messages[1]["content"])
    assert data is not None
    assert data["context"] == list(CONTEXT) and data["question"] == QUESTION and data["answer"] == WRONG
    assert first.spans, "the detector should flag a span of the wrong answer"
    listed = {(s["text"], s["hallucination_confidence"]) for s in data["flagged_spans"]}
    for span in first.spans:
        assert (span.text, round(span.prob, 2)) in listed
    # 1925 and Albert Speer are not in the context: the fact check's spans say what is wrong.
    assert any(s.reason != "model" for s in first.spans)
    whys = {s.get("why") for s in data["flagged_spans"]}
    assert "a name the context does not mention" in whys or "a date the context does not state" in whys


@in_module_loop
async def test_refine_that_makes_it_worse_keeps_the_original(detector: Detector, upstream: ScriptedUpstream,
                                                             services: Services) -> None:
    t = await threshold_between(detector, WRONG, FIXED)
    first = await score(detector, WRONG, threshold=t)
    worse = await score(detector, WORSE, threshold=t)
    assert worse.score is not None and first.score is not None and worse.score >= first.score
    upstream.set_rules(refine_rule(content=WORSE))
    verdict = await MODE.run(exchange([WRONG], mode="standard", options=StandardOptions(max_iterations=2),
                                      threshold=t), services)
    choice = verdict.choices[0]
    assert choice.text is None  # the upstream's answer stands
    assert choice.detection.score == pytest.approx(first.score, abs=1e-6)
    assert choice.detection.status == "detected"
    assert verdict.iterations == 2 and len(upstream.calls) == 2
    assert verdict.attributes["standard.stop"] == ("max_iterations",)


@in_module_loop
async def test_refine_that_times_out_ends_within_the_budget(detector: Detector, upstream: ScriptedUpstream,
                                                            services: Services) -> None:
    t = await threshold_between(detector, WRONG, FIXED)
    upstream.set_rules(refine_rule(content=FIXED, delay_s=30))
    ex = exchange([WRONG], mode="standard", options=StandardOptions(), threshold=t, budget_s=3.0)
    verdict = await MODE.run(ex, services)
    assert time.monotonic() <= ex.deadline  # the mode returned inside its budget
    assert verdict.choices[0].text is None and verdict.choices[0].detection.status == "detected"
    assert verdict.iterations == 0
    assert verdict.attributes["standard.stop"] == ("budget",)
    assert len(upstream.calls) == 1


@in_module_loop
async def test_refine_error_degrades_to_the_best_so_far(detector: Detector, upstream: ScriptedUpstream,
                                                        services: Services) -> None:
    t = await threshold_between(detector, WRONG, FIXED)
    upstream.set_rules([
        {"match": {"any": REFINE_MARKER, "times": 1}, "reply": {"content": FIXED}},
        {"match": {"any": REFINE_MARKER}, "reply": {"status": 500}},
    ])
    # convergence_threshold 0: never converges, so the second round runs and fails.
    verdict = await MODE.run(exchange([WRONG], mode="standard", threshold=t,
                                      options=StandardOptions(convergence_threshold=0.0)), services)
    assert verdict.choices[0].text == FIXED
    assert verdict.iterations == 1
    assert verdict.attributes["standard.stop"] == ("refine_error",)
    assert len(upstream.calls) == 3  # round 1, round 2 and its one retry


@in_module_loop
async def test_choices_are_refined_independently_and_concurrently(detector: Detector, upstream: ScriptedUpstream,
                                                                  services: Services) -> None:
    t = await threshold_between(detector, WRONG, FIXED)
    upstream.set_rules(refine_rule(content=FIXED, delay_s=1.0))
    verdict = await MODE.run(exchange([WRONG, FIXED, WRONG], mode="standard", options=StandardOptions(),
                                      threshold=t), services)
    assert [c.text for c in verdict.choices] == [FIXED, None, FIXED]
    assert [c.index for c in verdict.choices] == [0, 1, 2]
    assert verdict.attributes["standard.stop"] == ("converged", "not_detected", "converged")
    first, second = upstream.calls
    assert abs(second.time - first.time) < 1.0  # the second call went out before the first was answered


@in_module_loop
async def test_clean_answer_and_unavailable_detection_are_not_refined(upstream: ScriptedUpstream,
                                                                      services: Services) -> None:
    upstream.set_rules(refine_rule(content=FIXED))
    clean = await MODE.run(exchange([FIXED], mode="standard", options=StandardOptions(), threshold=0.99), services)
    huge = "x " * 150_000  # over the detector's answer size limit: invalid input
    unavailable = await MODE.run(exchange([huge], mode="standard", options=StandardOptions()), services)
    assert clean.choices[0].text is None and clean.iterations == 0 and clean.status == "clean"
    assert unavailable.status == "unavailable" and unavailable.choices[0].detection.reason == "invalid_input"
    assert unavailable.attributes["standard.stop"] == ("unavailable",)
    assert upstream.calls == []


def test_options_parse_and_errors_name_the_key() -> None:
    ctx = OptionContext(path="decisions[0].plugins[0].configuration", models=frozenset({"fixer"}))
    opts = standard.parse_options({"max_iterations": 4, "convergence_threshold": 0.3, "refine_model": "fixer",
                                   "refine_temperature": 0.5}, ctx)
    assert opts == StandardOptions(max_iterations=4, convergence_threshold=0.3, refine_model="fixer",
                                   refine_temperature=0.5)
    assert standard.parse_options({}, ctx) == StandardOptions()
    for raw, key in [({"max_iterations": 0}, "max_iterations"), ({"max_iterations": 2.5}, "max_iterations"),
                     ({"convergence_threshold": 1.5}, "convergence_threshold"),
                     ({"refine_model": "nowhere"}, "refine_model"), ({"max_iteration": 3}, "max_iteration")]:
        with pytest.raises(ConfigError) as err:
            standard.parse_options(raw, ctx)
        assert err.value.key == f"{ctx.path}.{key}"


@pytest.mark.parametrize("raw, key", [
    ({"max_iterations": True}, "max_iterations"),
    ({"max_iterations": "3"}, "max_iterations"),
    ({"max_iterations": None}, "max_iterations"),  # null is not "use the default"
    ({"convergence_threshold": "low"}, "convergence_threshold"),
    ({"refine_temperature": "cold"}, "refine_temperature"),
    ({"refine_model": 5}, "refine_model"),
])
def test_a_wrong_option_type_is_a_config_error_naming_the_key(raw: dict[str, object], key: str) -> None:
    ctx = OptionContext(path="hallucination.standard", models=frozenset({"fixer"}))
    with pytest.raises(ConfigError) as err:
        standard.parse_options(raw, ctx)
    assert err.value.key == f"{ctx.path}.{key}"


def test_null_temperature_and_threshold_mean_not_set() -> None:
    ctx = OptionContext(path="hallucination.standard", models=frozenset())
    opts = standard.parse_options({"refine_temperature": None, "convergence_threshold": None}, ctx)
    assert opts.refine_temperature is None and opts.convergence_threshold is None
