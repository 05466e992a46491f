"""Fixtures for the mode tests: the shipped detector, the scripted upstream and the LLM client.

Real: the detector (the shipped trained model in ONNX Runtime), HTTP, the LLM client.
Scripted: the upstream LLM only (``truthlens.testing.upstream``), one script per test.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest
import pytest_asyncio
from shipped_inputs import require_shipped_model

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import Detection, DetectionInput, Detector, DetectorSettings
from truthlens.llm import Endpoint, LLMClient
from truthlens.modes.base import Exchange, GroundedQuery, Services
from truthlens.testing.upstream import ScriptedUpstream

CONTEXT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It was designed by the engineering company of Gustave Eiffel and completed in 1889 for the World's Fair. "
    "The tower is 330 metres tall.",
)
QUESTION = "When was the Eiffel Tower completed and how tall is it?"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def detector() -> AsyncIterator[Detector]:
    require_shipped_model()
    det = create_detector(DetectorSettings())
    yield det
    await det.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as up:
        yield up


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def llm(upstream: ScriptedUpstream) -> AsyncIterator[LLMClient]:
    client = LLMClient({"default": Endpoint(base_url=upstream.base_url, timeout_s=10, max_retries=1)},
                       backoff_base_s=0.01)
    yield client
    await client.aclose()


@pytest.fixture
def services(detector: Detector, llm: LLMClient) -> Services:
    return Services(detector=detector, llm=llm)


async def score(detector: Detector, answer: str, context: Sequence[str] = CONTEXT, question: str = QUESTION,
                threshold: float = 0.5) -> Detection:
    """The detector's own verdict, so tests state their expectations relative to it."""
    return await detector.detect(DetectionInput(context=context, question=question, answer=answer),
                                 threshold=threshold)


def exchange(
    answers: Sequence[str],
    *,
    mode: str,
    options: Any,
    threshold: float = 0.5,
    budget_s: float = 20.0,
    model: str = "primary",
    passages: Sequence[str] = CONTEXT,
    question: str = QUESTION,
    messages: Sequence[Mapping[str, Any]] | None = None,
    sampling: Mapping[str, Any] | None = None,
) -> Exchange:
    if messages is None:
        messages = ({"role": "user", "content": question},)
    return Exchange(
        decision="test",
        mode=mode,
        threshold=threshold,
        options=options,
        query=GroundedQuery(model=model, question=question, passages=tuple(passages), messages=tuple(messages),
                            sampling=dict(sampling or {})),
        answers=tuple(answers),
        deadline=time.monotonic() + budget_s,
    )
