"""The shipped detector (``src/truthlens/detector/default_model``) in tests, and inputs it judges with a wide margin.

Each was probed with ``truthlens detect``: the hallucinated answers score ≥ 0.99, the grounded
ones 0.0, so the gateway tests built on them check the gateway, not a borderline score. The
flagged spans of a hallucinated answer lie inside its wrong facts (``WRONG_FACTS``).
"""

from __future__ import annotations

import pytest

from truthlens.detector.manifest import DEFAULT_MODEL_DIR


def require_shipped_model() -> None:
    """Skip the calling test when the shipped detector model has not been built into this checkout."""
    for name in ("model.onnx", "tokenizer.json", "manifest.json"):
        if not (DEFAULT_MODEL_DIR / name).is_file():
            pytest.skip(f"the shipped detector model is not built yet ({DEFAULT_MODEL_DIR.name}/{name} missing)")


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
