"""Shared fixture: the end-to-end stack (``tests/harness.py``).

``stack`` runs a real Envoy, the real processor and the scripted upstream (the only test
double) once per session. Its detector is the shipped trained model
(``src/truthlens/detector/default_model``) in ONNX Runtime; the tests feed it the inputs of
``tests/shipped_inputs.py``, which it judges with a wide margin.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

# Importing fuzzing registers and loads the hypothesis profile (TRUTHLENS_FUZZ_PROFILE, CI).
from fuzzing import pytest_configure, pytest_report_header, pytest_terminal_summary
from harness import Stack
from shipped_inputs import require_shipped_model

# The fuzz seed of a run whose examples are random: set, printed in the header and after a failure.
__all__ = ["pytest_configure", "pytest_report_header", "pytest_terminal_summary"]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_shipped_model()
    with Stack.running(tmp_path_factory.mktemp("stack"), None) as s:
        yield s


@pytest.fixture(autouse=True)
def _forget_chain_steps() -> Iterator[None]:
    """Each test starts with an empty chain memory: in-process tests share the process's memory
    (as a processor's exchanges do), and an answer one test checked must not become another
    test's chain step."""
    from truthlens.gateway.apis.context import chain

    chain.MEMORY.clear()
    yield
