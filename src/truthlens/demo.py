"""``truthlens demo``: the shipped stack on its shipped ports (Envoy 10000, processor 50051,
scripted upstream 8000; ``--free-ports`` picks free loopback ports instead), asked over plain
HTTP the way any OpenAI-compatible client asks (the standard library's ``urllib``: the demo needs
only the package's own dependencies, not the ``openai`` SDK), then everything stopped. Only the
packaged files are used (the starter config, ``envoy.yaml`` and the scripted upstream's demo
script), so it runs from any directory without a checkout.

Without ``--mode``: one grounded and two hallucinated answers (a made-up designer; the wrong
Apollo 11 astronaut in lunar orbit), plain and streaming, then the Apollo question once more on
a ``standard`` route, which refines the answer through the (scripted) model into the context's
own. With ``--mode MODE``: that mode's question asked twice, first on the starter config's
``lightweight`` route (detection only) and then on a route in ``MODE``, with the (scripted)
upstream answering what that mode re-asks, and a line saying what the mode changed."""

from __future__ import annotations

import difflib
import json
import re
import socket
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import yaml

from truthlens import starter
from truthlens.testing import launch

DEMO_SCRIPT = starter.DEMO_SCRIPT
PASSAGE = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the "
    "engineering company of Gustave Eiffel and completed in 1889 as the entrance arch to the "
    "World's Fair. It is 330 metres tall."
)
APOLLO_PASSAGE = (
    "Commander Neil Armstrong and Lunar Module Pilot Buzz Aldrin landed the Apollo Lunar Module Eagle on July 20, "
    "1969. Michael Collins flew the Command Module Columbia alone in lunar orbit while they were on the Moon's surface."
)
QUESTIONS = (  # label, question, the passage sent with it
    ("grounded", "When was the Eiffel Tower completed?", PASSAGE),
    ("hallucinated", "Who designed the Eiffel Tower?", PASSAGE),
    ("hallucinated: wrong person", "Who stayed in lunar orbit aboard Columbia during the Apollo 11 Moon landing?",
     APOLLO_PASSAGE),
)
_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")  # words and punctuation marks, for the demo's word diff
DEMO_HEADER = "x-truthlens-demo"
# The demo adds one route to the given config: requests with this header run ``standard``
# (self-refine) mode, so the last question shows a hallucination fixed, not only flagged.
REFINE_HEADER = (DEMO_HEADER, "refine")
REFINED = ("refined (standard mode)", QUESTIONS[2][1], APOLLO_PASSAGE)
MODES = ("lightweight", "standard", "premium", "acr", "auto")


@dataclass(frozen=True, slots=True)
class Scenario:
    """What ``--mode`` asks: the question and its passage, and the mode route's options."""

    mode: str
    does: str
    question: str
    passage: str
    options: Mapping[str, Any] = field(default_factory=dict)


SCENARIOS: dict[str, Scenario] = {
    s.mode: s
    for s in (
        Scenario("standard", "re-asks the model with the flagged spans until the answer is clean (self-refine)",
                 QUESTIONS[2][1], APOLLO_PASSAGE, {"max_iterations": 2}),
        Scenario("premium", "asks other models (verifier-a, verifier-b) to check each claim; a refuted claim is "
                 "replaced by theirs", "Who designed the Harbour Pavilion and where is it?",
                 "The Harbour Pavilion is a glass exhibition hall on the waterfront of Rotterdam. It was designed "
                 "by Antoni Gaudi and opened in 1998. The hall is 40 metres long.",
                 {"verification_models": ["verifier-a", "verifier-b"]}),
        Scenario("acr", "weighs the context against the model's own memory (ACR agents) and fuses the answer",
                 "In which year was the Eiffel Tower finished?",
                 "The Eiffel Tower in Paris was completed in 1925 for the World's Fair."),
        Scenario("auto", "detects first and escalates only a flagged answer (a contradicted span: to acr)",
                 "What year did the Eiffel Tower open?", PASSAGE),
    )
}
VERIFIERS = ("verifier-a", "verifier-b")  # premium's models: served by the same (scripted) upstream


def demo_config(config: Path, work: Path, *, mode: str = "standard", upstream_base_url: str | None = None) -> Path:
    """``config`` plus the demo's route in ``mode`` (requests with the demo header), written to
    ``work``; a relative model directory stays relative to the original file. ``upstream_base_url``
    moves every model endpoint there; premium's verifiers are added beside ``default``."""
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    model = (doc.get("detector") or {}).get("model", "builtin")
    if model != "builtin" and not Path(model).expanduser().is_absolute():
        doc["detector"]["model"] = str((config.parent / model).resolve())
    models = doc.setdefault("models", {})
    if upstream_base_url is not None:
        for endpoint in models.values():
            endpoint["base_url"] = upstream_base_url
    scenario = SCENARIOS.get(mode)
    if mode == "premium" and "default" in models:
        for name in VERIFIERS:
            models.setdefault(name, dict(models["default"]))
    name, value = ("demo_refine", REFINE_HEADER[1]) if mode == "standard" else (f"demo_{mode}", mode)
    doc.setdefault("decisions", []).append(
        {
            "name": name,
            "description": f"truthlens demo: {mode} mode when the demo's header asks for it",
            "priority": 1000,
            "rules": {
                "operator": "AND",
                "conditions": [
                    {"type": "path", "prefix": "/v1/chat/completions"},
                    {"type": "header", "name": DEMO_HEADER, "value": value},
                ],
            },
            "plugins": [
                {
                    "type": "hallucination",
                    "configuration": {
                        "enabled": True, "mode": mode, "actions": ["header", "body"],
                        **(dict(scenario.options) if scenario is not None else {}),
                    },
                }
            ],
        }
    )
    out = work / "config.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def run_demo(config: Path, mode: str | None = None, *, free_ports: bool = False) -> int:
    """Start the stack, ask, stop; 0 when every answer came back, 1 when the stack failed."""
    if mode is not None and mode not in MODES:
        print(f"demo: unknown mode {mode!r} (one of {', '.join(MODES)})")
        return 2
    ports = (
        launch.EnvoyPorts(launch.free_port(), launch.free_port(), launch.free_port(), launch.free_port())
        if free_ports else launch.EnvoyPorts()
    )
    busy = [] if free_ports else busy_ports(ports)
    if busy:
        print(f"demo: {', '.join(busy)} already in use on 127.0.0.1 (another demo, or a gateway you started?); "
              "stop it, or run: truthlens demo --free-ports")
        return 1
    children: list[launch.Child] = []
    with tempfile.TemporaryDirectory(prefix="truthlens-demo-") as tmp:
        work = Path(tmp)
        try:
            print(f"starting the scripted upstream (a test double, not a model) on 127.0.0.1:{ports.upstream} ...")
            upstream = launch.start_upstream(ports.upstream, work / "upstream.log", DEMO_SCRIPT)
            children.append(upstream)
            print(f"starting the processor on 127.0.0.1:{ports.processor} (loading the detector) ...")
            route_mode = "standard" if mode in (None, "lightweight") else mode
            base_url = f"http://127.0.0.1:{ports.upstream}/v1" if free_ports else None
            processor = launch.start_processor(
                demo_config(config, work, mode=route_mode, upstream_base_url=base_url),
                f"127.0.0.1:{ports.processor}", work / "processor.log",
            )
            children.append(processor)
            print(f"starting Envoy on 127.0.0.1:{ports.listener} ...")
            envoy_yaml = (
                launch.render_envoy_config(ports) if free_ports
                else launch.SHIPPED_ENVOY_CONFIG.read_text(encoding="utf-8")
            )
            envoy = launch.start_envoy(envoy_yaml, work)
            children.append(envoy)
            launch.wait_upstream(ports.upstream, upstream)
            launch.wait_processor(f"127.0.0.1:{ports.processor}", processor, timeout_s=120)
            launch.wait_envoy(ports.admin, envoy)
            print("ready.\n")
            client = _client(ports.listener)
            if mode is None:
                _ask_all(client, (*QUESTIONS, REFINED))
            elif mode == "lightweight":
                _ask_all(client, QUESTIONS)
            else:
                _compare(client, SCENARIOS[mode], _warning_text(config))
        except launch.LaunchError as exc:
            print(f"demo failed: {exc}")
            return 1
        except (urllib.error.URLError, OSError) as exc:  # an HTTPError (a status >= 400) included
            print(f"demo failed: the gateway's answer: {exc}")
            return 1
        finally:
            for child in reversed(children):
                child.stop()
    return 0


def busy_ports(ports: launch.EnvoyPorts) -> list[str]:
    """The shipped ports something else already listens on, named with what the demo runs there."""
    roles = {ports.listener: "Envoy", ports.upstream: "the scripted upstream", ports.processor: "the processor",
             ports.admin: "Envoy's admin"}
    busy = []
    for port, role in roles.items():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # As Envoy, gRPC and aiohttp bind: a port whose last connections wait in TIME-WAIT (the
            # demo just run before this one) is free to them; only a listener makes it busy.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                busy.append(f"port {port} ({role})")
    return busy


@dataclass(frozen=True, slots=True)
class Client:
    """Chat completions through Envoy over plain HTTP: what the ``openai`` SDK sends, without it."""

    base_url: str
    timeout_s: float = 180.0  # standard and premium re-ask the (scripted) model

    def post(self, body: dict[str, Any], headers: Mapping[str, str]) -> urllib.request.Request:
        data = json.dumps(body).encode("utf-8")
        all_headers = {"content-type": "application/json", "authorization": "Bearer demo-key-not-used", **headers}
        return urllib.request.Request(f"{self.base_url}/chat/completions", data=data, headers=all_headers)

    def complete(self, body: dict[str, Any], headers: Mapping[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
        """One JSON exchange: the response's headers and its parsed body."""
        with urllib.request.urlopen(self.post(body, headers), timeout=self.timeout_s) as resp:
            return _truthlens_headers(resp.headers), json.loads(resp.read())

    def stream(self, body: dict[str, Any], headers: Mapping[str, str]) -> tuple[dict[str, str], Iterator[Any]]:
        """One SSE exchange: the response's headers and its ``data:`` events, parsed, up to ``[DONE]``."""
        resp = urllib.request.urlopen(self.post({**body, "stream": True}, headers), timeout=self.timeout_s)

        def events() -> Iterator[Any]:
            with resp:
                for raw in resp:
                    line = raw.decode("utf-8").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[len("data:"):].strip()
                    if data == "[DONE]":
                        return
                    yield json.loads(data)

        return _truthlens_headers(resp.headers), events()


def _client(port: int) -> Client:
    return Client(f"http://127.0.0.1:{port}/v1")


def _ask_all(client: Client, questions: tuple[tuple[str, str, str], ...]) -> None:
    for label, question, passage in questions:
        header = dict([REFINE_HEADER]) if label == REFINED[0] else {}
        print(f"=== {label}: {question}")
        _ask(client, question, passage, header, "plain    ")
        _ask_streaming(client, question, passage, header)
        print()


def _compare(client: Client, scenario: Scenario, warning: str) -> None:
    """The scenario's question on the lightweight route, then on the mode's route."""
    print(f"=== {scenario.mode}: {scenario.does}")
    print(f"question: {scenario.question}")
    print(f"context:  {scenario.passage}\n")
    print("--- lightweight (detection only)")
    before = _ask(client, scenario.question, scenario.passage, {}, "plain    ")
    print(f"--- {scenario.mode}")
    header = {DEMO_HEADER: REFINE_HEADER[1] if scenario.mode == "standard" else scenario.mode}
    after = _ask(client, scenario.question, scenario.passage, header, "plain    ")
    _ask_streaming(client, scenario.question, scenario.passage, header)
    print()
    for line in what_changed(scenario.mode, before, after, warning):
        print(line)


def what_changed(mode: str, before: str, after: str, warning: str) -> list[str]:
    """In words: how the mode's answer differs from the model's own (the lightweight route's,
    without its warning), word by word, and whether each came with the warning."""
    original, warned_before = _without_warning(before, warning)
    final, warned_after = _without_warning(after, warning)
    pad = " " * (len(mode) + 15)
    if final == original:
        kept = "kept the answer" + (" and warned about it" if warned_after else " as it was")
        return [f"what {mode} changed: nothing in the answer's words ({kept})"]
    edits = _word_edits(original, final)
    lines = [f"what {mode} changed: it rewrote the answer: {'; '.join(edits)}",
             f"{pad}the model said  {json.dumps(original, ensure_ascii=False)}"
             + (" (lightweight warned about it)" if warned_before else ""),
             f"{pad}the client got  {json.dumps(final, ensure_ascii=False)}"]
    lines.append(f"{pad}" + ("with the warning: the new answer still departs from the context"
                             if warned_after else "with no warning: the new answer is clean"))
    return lines


def _without_warning(content: str, warning: str) -> tuple[str, bool]:
    """The answer without the route's warning paragraph, and whether it had one."""
    if content.startswith(warning):
        return content[len(warning):].lstrip(), True
    if content.endswith(warning):
        return content[: -len(warning)].rstrip(), True
    return content, False


def _word_edits(before: str, after: str) -> list[str]:
    """``"1925" -> "1889"``, ``dropped "and designed by Albert Speer"``, ``added "..."``."""
    old, new = _WORD.findall(before), _WORD.findall(after)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        # A replaced run longer on one side: its first words are the replacement, the rest dropped
        # (or added): "1925 and designed by Albert Speer" -> "1889" reads as 1925 -> 1889, dropped ...
        common = min(i2 - i1, j2 - j1)
        if common:
            edits.append(f"{_quote(old[i1:i1 + common])} -> {_quote(new[j1:j1 + common])}")
        if i2 - i1 > common:
            edits.append(f"dropped {_quote(old[i1 + common:i2])}")
        if j2 - j1 > common:
            edits.append(f"added {_quote(new[j1 + common:j2])}")
    return edits


def _quote(words: list[str]) -> str:
    return json.dumps(" ".join(words), ensure_ascii=False)


def _warning_text(config: Path) -> str:
    """The warning the config's routes add (the demo's routes inherit the global one)."""
    from truthlens.gateway.policy.config import DEFAULT_WARNING

    doc = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    return str((doc.get("hallucination") or {}).get("warning_template") or DEFAULT_WARNING)


def _request(question: str, passage: str) -> dict[str, Any]:
    return {"model": "demo-model", "messages": [{"role": "user", "content": question}],
            "truthlens_context": [passage]}


def _ask(client: Client, question: str, passage: str, header: dict[str, str], label: str) -> str:
    """One plain request; prints what the client sees and returns the answer's text."""
    headers = {"x-truthlens-include-spans": "true"} | header  # the verdict with its spans and reasons
    shown, completion = client.complete(_request(question, passage), headers)
    content = str(completion["choices"][0]["message"].get("content") or "")
    print(f"  {label} headers:", shown)
    print(f"  {label} content:", json.dumps(content, ensure_ascii=False))
    print(f"  {label} spans:  ", json.dumps(_spans(completion), ensure_ascii=False))
    return content


def _ask_streaming(client: Client, question: str, passage: str, header: dict[str, str]) -> None:
    headers = {"x-truthlens-include-spans": "true"} | header
    shown, events = client.stream(_request(question, passage), headers)
    print("  streaming headers:", shown)
    text, verdict = [], None
    for chunk in events:
        for choice in chunk.get("choices") or []:
            delta = (choice.get("delta") or {}).get("content")
            if delta:
                text.append(delta)
        if "truthlens" in chunk:
            verdict = chunk["truthlens"]  # the last chunk before [DONE]: the verdict
    print("  streaming content:", json.dumps("".join(text), ensure_ascii=False))
    print("  streaming verdict:", json.dumps(verdict))


def _spans(completion: Mapping[str, Any]) -> list[dict[str, object]]:
    """The flagged spans of the first choice: text, probability and what flagged it."""
    details = completion.get("truthlens") or {}
    choices = details.get("choices") or [{}]
    return [{k: s.get(k) for k in ("text", "prob", "reason")} for s in choices[0].get("spans") or []]


def _truthlens_headers(headers: Message) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items() if k.lower().startswith("x-truthlens-")}
