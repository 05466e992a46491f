"""The shipped embedding model, loaded once (real ONNX Runtime, nothing scripted)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from plugins.evidence.embedder import OnnxEmbedder


@pytest.fixture(scope="session")
def embedder() -> Iterator[OnnxEmbedder]:
    model = OnnxEmbedder.load()
    yield model
    model.close()
