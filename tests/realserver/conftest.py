"""The real-model-server stack: a real Envoy, the real processor and — instead of the scripted
upstream — a real llama.cpp server (llama-cpp-python + Gemma 3 270M base, both from PyPI:
``truthlens.testing.llama_server``), started once for the session. Without the server's
environment (``.llama/``, see ``.ci/run``) every test here skips and says why, and fails in CI
(``tests/environments.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import environments
import pytest
from shipped_inputs import require_shipped_model

from truthlens.testing import llama_server

from .real_stack import RealServerStack


@pytest.fixture(scope="session")
def real_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServerStack]:
    environments.require(llama_server.unavailable_reason(), "the real model server")
    require_shipped_model()
    stack = RealServerStack(tmp_path_factory.mktemp("real-server"))
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
