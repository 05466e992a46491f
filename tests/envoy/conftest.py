"""Applies the gateway's routes and script to the shared ``stack`` before each test."""

from __future__ import annotations

import pytest
from gateway_routes import DECISIONS, SCRIPT
from harness import Stack


@pytest.fixture
def gateway(stack: Stack) -> Stack:
    """The shared stack with these routes and this script (other suites may have changed both)."""
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    return stack
