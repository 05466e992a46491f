"""The held-out conversations (``tests/fixtures/reading/chat_heldout.json``, written before the
reading rules and never changed after): with the shipped config, ordinary chat written with
context-like labels is left alone and the frameworks' templates are read; a route that names the
plain layouts reads the RAG-shaped plain layouts too. ``python -m bench.chat_reading`` prints
the table."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from truthlens.gateway.apis.chat.body import decode_chat_request
from truthlens.gateway.apis.context.builtin import TEMPLATES
from truthlens.gateway.apis.context.reading import BUILTIN
from truthlens.gateway.apis.context.settings import ContextSettings
from truthlens.gateway.policy.config import load_config
from truthlens.testing import launch

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "reading" / "chat_heldout.json").read_text())["cases"]
SHIPPED = load_config(launch.SHIPPED_CONFIG).hallucination.context
PLAIN = replace(SHIPPED, templates=BUILTIN)
FRAMEWORK_NAMES = {t.name for t in TEMPLATES}
# RAG-shaped cases the plain layouts do not read (the case as written; the reason beside it).
PLAIN_MISSES = {"knowledge-base": "'Knowledge base:' is not one of the layout's context labels"}


def source(ctx: ContextSettings, messages: list[dict[str, str]]) -> str:
    return decode_chat_request(json.dumps({"model": "m", "messages": messages}).encode()).read(ctx).context_source


def test_the_set_is_the_size_the_issue_asks() -> None:
    assert sum(c["kind"] == "ordinary" for c in CASES) >= 40 and sum(c["kind"] == "rag" for c in CASES) >= 15


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "ordinary"], ids=lambda c: c["id"])
def test_ordinary_chat_is_left_alone_with_the_shipped_config(case: dict[str, Any]) -> None:
    assert source(SHIPPED, case["messages"]) == ""


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "rag"], ids=lambda c: c["id"])
def test_rag_shapes_are_read_where_the_route_reads_their_layout(case: dict[str, Any]) -> None:
    if case["id"] in PLAIN_MISSES:
        pytest.xfail(PLAIN_MISSES[case["id"]])
    shipped = source(SHIPPED, case["messages"])
    if shipped:  # a framework's template: read with the shipped config
        assert shipped.removeprefix("template:") in FRAMEWORK_NAMES
    else:  # a plain layout: read on a route that names plain
        assert source(PLAIN, case["messages"]).startswith("template:plain-")


def test_every_framework_case_is_read_with_the_shipped_config() -> None:
    framework = [c for c in CASES if c["kind"] == "rag" and source(PLAIN, c["messages"]).removeprefix("template:")
                 in FRAMEWORK_NAMES]
    assert len(framework) >= 6
    assert all(source(SHIPPED, c["messages"]) for c in framework)
