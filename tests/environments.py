"""Tests that need an environment of their own (Triton's, the real model server's): skipped where
it cannot be built, with the reason, but failed in CI (``CI=true``), where ``.ci/run`` builds both.
A CI whose environment broke must not pass by skipping the tests that needed it."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(reason: str | None, what: str) -> None:
    """Go on when ``reason`` is None (the environment is there); else skip, or fail in CI."""
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"{what} unavailable in CI, where .ci/run builds its environment: {reason}")
    pytest.skip(f"{what} unavailable: {reason}")
