"""Premium ships a hybrid answer only when the re-check passes it: a hybrid that scores lower than
the primary but is still flagged is no fix, and the primary goes out with its warning.

Real: the shipped detector in ONNX Runtime (also the entailment checker), HTTP, the LLM client.
Scripted: the verifiers' answers and verdicts (both repeat an unsupported claim the primary also
makes, and name the right designer where the primary names the wrong one)."""

from __future__ import annotations

import pytest
from shipped_inputs import PAVILION_PRIMARY, PAVILION_VERIFIER, PAVILION_WRONG_CLAIM

from truthlens.detector.types import Detector
from truthlens.modes.base import Services
from truthlens.testing.upstream import ScriptedUpstream

from .test_premium import MODE, TWO, expected_replacement, premium_exchange, score, verifiers

in_module_loop = pytest.mark.asyncio(loop_scope="module")

GOLD = " It is made of solid gold."  # the context says glass: unsupported in every answer
PRIMARY = PAVILION_PRIMARY + GOLD


@in_module_loop
async def test_a_still_flagged_hybrid_is_not_shipped(detector: Detector, upstream: ScriptedUpstream,
                                                     services: Services) -> None:
    verifier = PAVILION_VERIFIER + GOLD
    replacement = await expected_replacement(detector, verifier)
    hybrid = PRIMARY.replace(PAVILION_WRONG_CLAIM, replacement)
    primary_d, hybrid_d = await score(detector, PRIMARY), await score(detector, hybrid)
    assert primary_d.score is not None and hybrid_d.score is not None
    # The case: the hybrid scores better (the designer fixed) yet is still flagged (the gold).
    assert hybrid_d.score < primary_d.score and hybrid_d.status == "detected", (primary_d, hybrid_d)
    upstream.set_rules(verifiers({"content": verifier}, {"content": verifier}))
    verdict = await MODE.run(premium_exchange([PRIMARY], TWO), services)
    choice = verdict.choices[0]
    assert choice.text is None and not verdict.rewritten  # the primary, with its warning
    assert choice.detection.status == "detected"
    assert choice.detection.score == pytest.approx(primary_d.score, abs=1e-6)
