"""The frameworks' own packages through the real stack: each docs page's code (``docs/frameworks/``)
run as written, against Envoy, the processor and the scripted upstream (the only double: it
answers the pages' question with an invented claim), and the verdict each framework shows
compared with the control: the same question and documents sent with ``truthlens_context``.

The packages are the ``frameworks`` extra (``pip install -e '.[frameworks]'``, as ``.ci/run``
does); without it these tests skip and say so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Stack
from shipped_inputs import HALLUCINATED

PAGES = Path(__file__).resolve().parents[2] / "docs" / "frameworks"
DOCS_URL = "http://127.0.0.1:10000/v1"  # what the pages' code calls
QUESTION = "When was the Eiffel Tower completed?"
DOCS = ("The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
        "It was designed by the engineering company of Gustave Eiffel and completed in 1889.")
SCRIPT = [{"name": "invents", "match": {"any": QUESTION}, "reply": {"content": HALLUCINATED}}]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network from the tests
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def require(*modules: str) -> None:
    """Skip, naming the extra, when a framework package is missing."""
    for module in modules:
        pytest.importorskip(module, reason=f"{module} is not installed: pip install -e '.[frameworks]' "
                                           "(.ci/run installs it, so these tests run in CI)")


@pytest.fixture
def gateway(stack: Stack) -> Iterator[Stack]:
    """The shared stack on the shipped decisions, the upstream inventing a claim."""
    assert stack.write_config(stack.config_yaml()) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    yield stack


def control(stack: Stack) -> str:
    """``x-truthlens-detected`` of the pages' question and documents sent with ``truthlens_context``."""
    body = {"model": "demo-model", "messages": [{"role": "user", "content": QUESTION}], "truthlens_context": list(DOCS)}
    return stack.raw("POST", "/v1/chat/completions", body).headers["x-truthlens-detected"]


def run_page(name: str, stack: Stack) -> dict[str, Any]:
    """Every ``python`` block of ``docs/frameworks/<name>.md``, in order, in one namespace, calling
    the stack instead of the pages' Envoy; the namespace after the last block."""
    text = (PAGES / f"{name}.md").read_text(encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": f"docs_frameworks_{name}"}
    for block in _BLOCK.findall(text):
        code = compile(block.replace(DOCS_URL, stack.base_url), str(PAGES / f"{name}.md"), "exec")
        exec(code, namespace)  # the docs page's own code, run as a reader would
    return namespace
