"""Metric labels stay bounded whatever clients send: a model label is one of the config's
``models:`` names or ``other``, a decision label one of the config's decisions.

Real: Envoy, gRPC ext_proc, the processor and its ``/metrics`` endpoint, the shipped ONNX
detector. Scripted: the upstream, which answers the primary call wrongly and the self-refine
re-ask (sent with the client's model name) correctly.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from harness import Stack, chat_body, decision
from shipped_inputs import CONTEXT, GROUNDED, HALLUCINATED, QUESTION

from truthlens.modes.prompts import REFINE_MARKER

pytestmark = pytest.mark.envoy

CONFIGURED = {"default", "configured-model"}
DECISIONS = {"refine_route"}
SERIES = re.compile(r"^(truthlens_[a-z_]+)\{(.*)\}\s", re.MULTILINE)


def series_of(text: str, metric: str) -> list[tuple[str, dict[str, str]]]:
    return [(name, dict(re.findall(r'(\w+)="([^"]*)"', labels)))
            for name, labels in SERIES.findall(text) if name == metric]


@pytest.fixture
def refining(stack: Stack) -> Stack:
    route = decision("refine_route", priority=10, mode="standard", actions=["header", "body"], max_iterations=1)
    config = stack.config_yaml(decisions=[route], models={name: {} for name in CONFIGURED})
    assert stack.write_config(config) in ("applied", "unchanged")
    stack.set_script([
        {"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": GROUNDED}},
        {"name": "primary", "match": {"user": QUESTION}, "reply": {"content": HALLUCINATED}},
    ])
    return stack


def ask(stack: Stack, model: str) -> None:
    resp = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=[CONTEXT], model=model))
    assert resp.status == 200
    assert resp.headers["x-truthlens-mode"] == "standard"


def test_client_model_names_do_not_become_labels(refining: Stack) -> None:
    stack = refining
    before = set(SERIES.findall(stack.metrics_text()))  # the shared processor's earlier series
    names = [f"client-model-{i}" for i in range(300)] + ["configured-model"]
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda m: ask(stack, m), names))
    calls = stack.upstream_calls()
    assert {c["model"] for c in calls if c["rule"] == "refine"} == set(names)  # re-asked with each name

    text = stack.metrics_text()
    assert "client-model-" not in text
    new = set(SERIES.findall(text)) - before
    labels = [(name, dict(re.findall(r'(\w+)="([^"]*)"', raw))) for name, raw in new]
    # One series per metric and label set (a histogram's buckets, sum and count are one):
    # bounded by the config and the roles, where one per client name would be 300 or more.
    families = {(re.sub(r"_(bucket|sum|count|created|total)$", "", name),
                 tuple(sorted((k, v) for k, v in lb.items() if k != "le"))) for name, lb in labels}
    assert len(families) <= 20, sorted(families)
    assert {lb["model"] for _, lb in labels if "model" in lb} <= CONFIGURED | {"other"}
    assert {lb["decision"] for _, lb in labels if "decision" in lb} <= DECISIONS
    refine = {lb["model"]: lb for _, lb in series_of(text, "truthlens_models_used_total") if lb["role"] == "refine"}
    assert {"other", "configured-model"} <= set(refine)
    other = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith('truthlens_models_used_total{model="other",role="refine"}'))
    assert other >= 300


def test_a_huge_model_name_does_not_grow_the_metrics(refining: Stack) -> None:
    stack = refining
    ask(stack, "warm-up-model")  # every series this exchange touches exists from here on
    before = stack.metrics_text()
    huge = "m" * 200_000
    ask(stack, huge)
    after = stack.metrics_text()
    assert huge[:1000] not in after
    # Same series, counts one higher: only digits may change.
    assert len(after) - len(before) < 200
    assert [name for name, _ in SERIES.findall(after)] == [name for name, _ in SERIES.findall(before)]


def test_a_loaded_in_process_detector_reads_ready(stack: Stack) -> None:
    """The shipped ONNX detector runs in-process: once /readyz says ready, the readiness gauge
    says 1 (it read 0 for every backend but the remote one)."""
    assert stack.metric("truthlens_detector_backend_ready") == 1.0
