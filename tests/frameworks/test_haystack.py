"""Haystack (haystack-ai 3.4.1) through the real stack: the docs page's code (the Get Started
RAG pipeline, and its prompt streamed) is checked with the control's verdict, the verdict where
the page reads it. Real: Envoy, gRPC ext_proc, the processor with the shipped detector and
decisions, the Haystack package. Scripted: the upstream."""

from __future__ import annotations

import pytest
from conftest import control, require, run_page
from harness import Stack
from shipped_inputs import WRONG_FACTS

pytestmark = [pytest.mark.envoy, pytest.mark.filterwarnings("ignore::UserWarning")]


def test_the_pages_code_shows_the_controls_verdict(gateway: Stack) -> None:
    require("haystack")
    expected = control(gateway)
    assert expected == "true"
    ns = run_page("haystack", gateway)
    verdict = ns["verdict"]
    assert verdict.headers["x-truthlens-context-source"] == "template:haystack-get-started"
    assert verdict.detected == expected
    assert any(f in ns["reply"][s["start"]:s["end"]] for s in verdict.spans for f in WRONG_FACTS)
    streamed = ns["streamed_verdict"]
    assert streamed is not verdict and streamed.complete and streamed.detected == expected
    assert "".join(ns["chunks"]) == ns["streamed_reply"]
