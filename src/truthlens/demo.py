"""``truthlens demo``: the shipped stack on its shipped ports (Envoy 10000, processor 50051,
scripted upstream 8000), one grounded and two hallucinated answers (a made-up designer; the
wrong Apollo 11 astronaut in lunar orbit), plain and streaming, asked with the official
``openai`` client; then the Apollo question once more on a ``standard`` route, which refines the
answer through the (scripted) model into the context's own. Prints what the client sees, then
stops everything."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from truthlens.testing import launch

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam  # openai: the dev extra (the demo's client)

DEMO_SCRIPT = launch.REPO_ROOT / "deploy" / "demo_script.yaml"
PASSAGE = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the "
    "engineering company of Gustave Eiffel and completed in 1889 as the entrance arch to the "
    "World's Fair. It is 330 metres tall."
)
APOLLO_PASSAGE = "Michael Collins flew the Command Module Columbia alone in lunar orbit."
QUESTIONS = (  # label, question, the passage sent with it
    ("grounded", "When was the Eiffel Tower completed?", PASSAGE),
    ("hallucinated", "Who designed the Eiffel Tower?", PASSAGE),
    ("hallucinated: wrong person", "Who stayed in lunar orbit aboard Columbia during the Apollo 11 Moon landing?",
     APOLLO_PASSAGE),
)
# The demo adds one route to the given config: requests with this header run ``standard``
# (self-refine) mode, so the last question shows a hallucination fixed, not only flagged.
REFINE_HEADER = ("x-truthlens-demo", "refine")
REFINED = ("refined (standard mode)", QUESTIONS[2][1], APOLLO_PASSAGE)


def demo_config(config: Path, work: Path) -> Path:
    """``config`` plus the demo's ``standard`` route, written to ``work`` (a relative model
    directory stays relative to the original file)."""
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    model = (doc.get("detector") or {}).get("model", "builtin")
    if model != "builtin" and not Path(model).expanduser().is_absolute():
        doc["detector"]["model"] = str((config.parent / model).resolve())
    doc.setdefault("decisions", []).append(
        {
            "name": "demo_refine",
            "description": "truthlens demo: self-refine when the demo's header asks for it",
            "priority": 1000,
            "rules": {
                "operator": "AND",
                "conditions": [
                    {"type": "path", "prefix": "/v1/chat/completions"},
                    {"type": "header", "name": REFINE_HEADER[0], "value": REFINE_HEADER[1]},
                ],
            },
            "plugins": [
                {
                    "type": "hallucination",
                    "configuration": {"enabled": True, "mode": "standard", "actions": ["header", "body"]},
                }
            ],
        }
    )
    out = work / "config.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def run_demo(config: Path) -> int:
    ports = launch.EnvoyPorts()
    children: list[launch.Child] = []
    with tempfile.TemporaryDirectory(prefix="truthlens-demo-") as tmp:
        work = Path(tmp)
        try:
            print("starting the scripted upstream (a test double, not a model) on 127.0.0.1:8000 ...")
            upstream = launch.start_upstream(ports.upstream, work / "upstream.log", DEMO_SCRIPT)
            children.append(upstream)
            print("starting the processor on 127.0.0.1:50051 (loading the detector) ...")
            processor = launch.start_processor(
                demo_config(config, work), f"127.0.0.1:{ports.processor}", work / "processor.log"
            )
            children.append(processor)
            print("starting Envoy on 127.0.0.1:10000 ...")
            envoy = launch.start_envoy(launch.SHIPPED_ENVOY_CONFIG.read_text(encoding="utf-8"), work)
            children.append(envoy)
            launch.wait_upstream(ports.upstream, upstream)
            launch.wait_processor(f"127.0.0.1:{ports.processor}", processor, timeout_s=120)
            launch.wait_envoy(ports.admin, envoy)
            print("ready.\n")
            _ask_all(ports.listener)
        except launch.LaunchError as exc:
            print(f"demo failed: {exc}")
            return 1
        finally:
            for child in reversed(children):
                child.stop()
    return 0


def _ask_all(port: int) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="demo-key-not-used", max_retries=0)
    for label, question, passage in (*QUESTIONS, REFINED):
        # the verdict comes back with its spans and each span's reason
        headers = {"x-truthlens-include-spans": "true"} | (dict([REFINE_HEADER]) if label == REFINED[0] else {})
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]
        extra_body = {"truthlens_context": [passage]}
        print(f"=== {label}: {question}")
        raw = client.chat.completions.with_raw_response.create(
            model="demo-model", messages=messages, extra_body=extra_body, extra_headers=headers
        )
        completion = raw.parse()
        print("  plain     headers:", _truthlens_headers(raw.headers))
        print("  plain     content:", json.dumps(completion.choices[0].message.content, ensure_ascii=False))
        print("  plain     spans:  ", json.dumps(_spans(completion), ensure_ascii=False))
        with client.chat.completions.with_streaming_response.create(
            model="demo-model", messages=messages, extra_body=extra_body, extra_headers=headers, stream=True
        ) as resp:
            print("  streaming headers:", _truthlens_headers(resp.headers))
            text, verdict = [], None
            for chunk in resp.parse():
                for choice in chunk.choices:
                    if choice.delta.content:
                        text.append(choice.delta.content)
                extra = getattr(chunk, "model_extra", None) or {}
                if "truthlens" in extra:
                    verdict = extra["truthlens"]
            print("  streaming content:", json.dumps("".join(text), ensure_ascii=False))
            print("  streaming verdict:", json.dumps(verdict))
        print()


def _spans(completion: object) -> list[dict[str, object]]:
    """The flagged spans of the first choice: text, probability and what flagged it."""
    details = (getattr(completion, "model_extra", None) or {}).get("truthlens") or {}
    choices = details.get("choices") or [{}]
    return [{k: s.get(k) for k in ("text", "prob", "reason")} for s in choices[0].get("spans") or []]


def _truthlens_headers(headers: object) -> dict[str, str]:
    items = getattr(headers, "items", None)
    if items is None:
        return {}
    with contextlib.suppress(Exception):
        return {k: v for k, v in items() if k.lower().startswith("x-truthlens-")}
    return {}
