"""The shipped detector (``src/truthlens/detector/default_model``) in tests, and inputs it judges clearly.

With the shipped defaults (learned verdict, route threshold 0.5) the hallucinated answers here
score at least 0.6 (0.67–0.78 with the shipped verdict) and each carries a fact-check finding on
its wrong facts (fused token probability ≥ 0.8 there); the grounded ones at most 0.35 (0.09–0.26):
the gateway tests built on them check the gateway, not a borderline score. The flagged spans of a hallucinated answer lie inside its wrong
facts (``WRONG_FACTS``). ``tests/detector/test_shipped_inputs.py`` holds these figures to the
model, so this note cannot go stale unseen.
"""

from __future__ import annotations

import pytest

from truthlens.detector.manifest import DEFAULT_MODEL_DIR


def require_shipped_model() -> None:
    """Fail the calling test when a file of the shipped detector model is missing: the model is
    committed and is what the package promises, so a checkout without it is broken, not a case
    to skip."""
    for name in ("model.onnx", "tokenizer.json", "manifest.json"):
        if not (DEFAULT_MODEL_DIR / name).is_file():
            pytest.fail(f"the shipped detector model is incomplete: {DEFAULT_MODEL_DIR}/{name} is missing "
                        "(it is committed; restore it from git)")


# --- a passage about the Eiffel Tower (the demo's) and answers to questions about it ---------

CONTEXT = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the "
    "engineering company of Gustave Eiffel and completed in 1889 as the entrance arch to the World's Fair."
)
QUESTION = "When was the Eiffel Tower completed?"
GROUNDED = "The Eiffel Tower was completed in 1889."
HALLUCINATED = "The Eiffel Tower was completed in 1925 and designed by Albert Speer."
WRONG_FACTS = ("1925", "Albert Speer")  # where the detector's spans in HALLUCINATED lie
# Keeps HALLUCINATED's errors and adds one: asked QUESTION, it scores above HALLUCINATED.
WORSE = HALLUCINATED + " It is made of solid gold."

# --- a made-up building (premium mode): the context is the only truth -------------------------
# Premium mode's case (tests/modes/test_premium.py checks the shipped detector's claim judgements on it).

PAVILION_CONTEXT = (
    "The Harbour Pavilion is a glass exhibition hall on the waterfront of Rotterdam. "
    "It was designed by Antoni Gaudi and opened in 1998. The hall is 40 metres long."
)
PAVILION_QUESTION = "Who designed the Harbour Pavilion and where is it?"
PAVILION_PRIMARY = "The Harbour Pavilion is in Rotterdam. It was designed by Isambard Brunel. It is 40 metres long."
PAVILION_WRONG_CLAIM = "It was designed by Isambard Brunel."
PAVILION_VERIFIER = "The Harbour Pavilion stands in Rotterdam. It was designed by Antoni Gaudi. It is 40 metres long."
PAVILION_JUDGED = "The Harbour Pavilion in Rotterdam was designed by Antoni Gaudi and is 40 metres long."

# --- Apollo 11: the wrong astronaut in lunar orbit -----------------------------------------
# The context is the whole paragraph, so every name of the wrong answer is in it and only the
# roles are swapped (Aldrin in orbit, Collins landing). The shipped detector flags "Buzz Aldrin"
# by its role check (reason ``misattributed_entity``: the context says "in lunar orbit" of
# Michael Collins), whatever the model's own probability; the refine prompt then carries the
# check's ``why``. The fix restates the paragraph in other words (Collins in orbit, Armstrong and
# Aldrin landing) and comes back clean. Pinned in tests/envoy/test_apollo_case.py.
APOLLO_CONTEXT = (
    "Commander Neil Armstrong and Lunar Module Pilot Buzz Aldrin landed the Apollo Lunar Module Eagle on July 20, "
    "1969. Michael Collins flew the Command Module Columbia alone in lunar orbit while they were on the Moon's surface."
)
APOLLO_QUESTION = "Who stayed in lunar orbit aboard Columbia during the Apollo 11 Moon landing?"
APOLLO_WRONG = (
    "Buzz Aldrin stayed in lunar orbit aboard the Command Module Columbia while Armstrong and Collins landed."
)
APOLLO_WRONG_PERSON = "Buzz Aldrin"
APOLLO_FIXED = "Michael Collins stayed in lunar orbit aboard Columbia while Armstrong and Aldrin landed on the Moon."
