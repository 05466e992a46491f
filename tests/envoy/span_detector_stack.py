"""A stack whose processor config has a generative span detector (``detector.backend: llm`` or
``detector.confirm``) served by the stack's scripted upstream under the model name
``span-detector``, and the script both suites share: the span judge's rules first (keyed by a
word of the question, which the detection request quotes), then the client's answers.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED
from harness import RawResponse, Stack, chat_body
from shipped_inputs import QUESTION

SPAN_MODEL = "span-detector"
SPANS = {"x-truthlens-include-spans": "true"}

# Words a question can carry to steer the span judge (the detection request quotes the question).
SCRIPT = [
    {"name": "judge_clears", "match": {"model": SPAN_MODEL, "any": "clear-me"},
     "reply": {"span_judge": {"quotes": []}}},
    {"name": "judge_slow", "match": {"model": SPAN_MODEL, "any": "slow-judge"},
     "reply": {"delay_s": 4, "span_judge": True}},
    {"name": "judge_garbled", "match": {"model": SPAN_MODEL, "any": "garbled-judge"},
     "reply": {"span_judge": {"malformed": True}}},
    {"name": "judge_invents", "match": {"model": SPAN_MODEL, "any": "inventive-judge"},
     "reply": {"span_judge": {"extra_quotes": ["designed by Gustave Eiffel in 1925"]}}},
    {"name": "judge", "match": {"model": SPAN_MODEL}, "reply": {"span_judge": True}},
    {"name": "grounded", "match": {"user": "grounded"}, "reply": {"content": GROUNDED}},
    {"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}},
]


class SpanDetectorStack(Stack):
    """The stack with ``document`` as its config; every ``models:`` entry points at its upstream."""

    document: Mapping[str, Any] = {}

    def config_yaml(self, **_: Any) -> str:
        doc = copy.deepcopy(dict(self.document))
        for endpoint in doc["models"].values():
            endpoint["base_url"] = f"http://127.0.0.1:{self.ports.upstream}/v1"
        return str(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


@contextmanager
def running(workdir: Path, document: Mapping[str, Any]) -> Iterator[SpanDetectorStack]:
    stack = SpanDetectorStack(workdir, None)
    stack.document = document
    try:
        stack.start()
        stack.set_script(SCRIPT)
        yield stack
    finally:
        stack.stop()


def ask(stack: Stack, words: str, *, route: str | None = None, stream: bool = False) -> RawResponse:
    headers = {**SPANS, **({"x-test-route": route} if route else {})}
    return stack.raw("POST", "/v1/chat/completions",
                     chat_body(f"{words}: {QUESTION}", context=CONTEXT, stream=stream), headers)


def span_detector_calls(stack: Stack) -> list[dict[str, Any]]:
    return [c for c in stack.upstream_calls() if c["model"] == SPAN_MODEL]


def wait_for_metric(stack: Stack, name: str, at_least: float, timeout_s: float = 5.0, **labels: str) -> float:
    """The metric once it reaches ``at_least`` (counters are bumped just after the answer goes out)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = stack.metric(name, **labels)
        if value >= at_least or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def fresh(stack: SpanDetectorStack) -> SpanDetectorStack:
    """The module's stack for one test: the shared script again, and an empty call log."""
    stack.set_script(SCRIPT)
    return stack


def content(resp: RawResponse) -> str:
    """The first choice's message text of a JSON chat answer."""
    return str(resp.json()["choices"][0]["message"]["content"])
