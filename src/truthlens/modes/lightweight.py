"""Lightweight mode: one detection per choice, no rewrite (the gateway adds the warning).

TruthLens §5.3: detection as an information service. The answers pass through unchanged;
the verdict carries each choice's score and spans.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from truthlens.detector.types import Detection, DetectionInput, DetectorError
from truthlens.modes.base import ChoiceVerdict, Exchange, Services, Verdict
from truthlens.options import OptionContext, Section

NAME = "lightweight"
REWRITES = False  # the answer passes through; only the gateway's warning is added


@dataclass(frozen=True, slots=True)
class LightweightOptions:
    """The mode has no options of its own (threshold and actions are the route's)."""


def parse_options(raw: Mapping[str, Any], ctx: OptionContext) -> LightweightOptions:
    Section(raw, ctx.path).allow(hint="lightweight mode takes no options")
    return LightweightOptions()


class LightweightMode:
    name = NAME

    async def run(self, exchange: Exchange, services: Services) -> Verdict:
        query = exchange.query
        items = [DetectionInput(context=query.passages, question=query.question, answer=a) for a in exchange.answers]
        remaining = exchange.remaining_s()
        detections: list[Detection]
        if remaining <= 0:
            detections = [Detection.unavailable("budget_exhausted") for _ in items]
        else:
            try:
                detections = await services.detector.detect_many(
                    items, threshold=exchange.threshold, timeout_s=remaining
                )
            except DetectorError as exc:  # InvalidInput: over the detector's size limits
                detections = [Detection.unavailable(exc.reason) for _ in items]
        return Verdict(
            mode=NAME,
            choices=tuple(ChoiceVerdict(index=i, detection=d) for i, d in enumerate(detections)),
            iterations=0,
        )


def build() -> LightweightMode:
    return LightweightMode()
