"""Real collaborators for the ACR tests: the shipped embedder and detector (ONNX Runtime), an
LLM client over real HTTP, and the scripted upstream (the only test double) at port 0."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from shipped_inputs import require_shipped_model
from span_capture import SpanCapture, captured_spans

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import Detector, DetectorSettings
from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.llm import Endpoint, LLMClient
from truthlens.testing.upstream import ScriptedUpstream


@pytest.fixture(scope="session")
def embedder() -> Iterator[OnnxEmbedder]:
    model = OnnxEmbedder.load()
    yield model
    model.close()


@pytest.fixture(scope="session")
async def detector() -> AsyncIterator[Detector]:
    require_shipped_model()
    built = create_detector(DetectorSettings())
    yield built
    await built.close()


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream(port=0) as server:
        yield server


@pytest.fixture
async def llm(upstream: ScriptedUpstream, spans: SpanCapture) -> AsyncIterator[LLMClient]:
    client = LLMClient({"default": Endpoint(base_url=upstream.base_url, timeout_s=10.0, max_retries=0)},
                       tracer=spans.tracer)
    yield client
    await client.aclose()


@pytest.fixture
def spans() -> Iterator[SpanCapture]:
    """Spans the modes and the LLM client emit through the tracer they are handed, in memory."""
    with captured_spans() as exporter:
        yield exporter
