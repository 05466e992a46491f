"""Where the gateway reads context in conversations written to look like RAG and not be: the
held-out set ``tests/fixtures/reading/chat_heldout.json`` (written before the reading rules,
never changed after), in process through the chat translator.

Per kind: ``ordinary`` (the user's own situation under a label, a persona's background section,
a system prompt giving the date, code with context tags or providers: no retrieved material)
counts the conversations the gateway read context in (each one a false positive: an ordinary
answer checked and perhaps warned); ``rag`` (retrieved material in plain layouts and the
frameworks' templates) counts those it read (each one missed is an answer left unchecked).
Each is run under the shipped config's context settings and under the same settings with the
plain layouts named (``templates: [builtin, plain]``), the opt-in a route whose application
writes its own plain layout uses.

The third row is the other way to decide, measured for the choice docs/context.md states: the
plain layouts read by default, but only when what the section holds passes a test of its
content (:func:`holds_material`, written from the principle before it was run on this set:
retrieved material is third-person text of some length, where a user's own situation speaks in
the first person, a persona addresses the assistant or the user, and a date is a line or two).

    python -m bench.chat_reading [--cases]
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import replace
from pathlib import Path

from training.corpus import ragtruth
from truthlens.gateway.apis.chat.body import decode_chat_request
from truthlens.gateway.apis.context.settings import ContextSettings, parse_templates
from truthlens.gateway.policy.config import load_config
from truthlens.options import Section
from truthlens.testing import launch

HELDOUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "reading" / "chat_heldout.json"


def cases() -> list[dict[str, object]]:
    return list(json.loads(HELDOUT.read_text())["cases"])


def configs() -> dict[str, ContextSettings]:
    shipped = load_config(launch.SHIPPED_CONFIG).hallucination.context
    out = {"shipped": shipped}
    try:
        plain = parse_templates(Section({"templates": ["builtin", "plain"]}, "context"))
        out["plain opted in"] = replace(shipped, templates=plain)
        out["content test"] = out["plain opted in"]
    except Exception as exc:  # a build without the opt-in name: say so, measure the rest
        print(f"(no plain opt-in in this build: {exc})")
    return out


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we're|we've)\b", re.IGNORECASE)
_ADDRESSED = re.compile(r"\b(?:you are|you're|you talk|the user|user's|the learner|the child)\b", re.IGNORECASE)
MIN_MATERIAL_WORDS = 12


def holds_material(section: str) -> bool:
    """The content test: at least a dozen words, none of them the first person singular, none
    addressing the assistant or naming the user."""
    return (len(section.split()) >= MIN_MATERIAL_WORDS and _FIRST_PERSON.search(section) is None
            and _ADDRESSED.search(section) is None)


def read_source(ctx: ContextSettings, messages: list[dict[str, str]], content_test: bool = False) -> str:
    body = json.dumps({"model": "m", "messages": messages}).encode()
    request = decode_chat_request(body).read(ctx)
    if content_test and request.context_source.startswith("template:plain") \
            and not holds_material("\n".join(request.passages)):
        return ""
    return request.context_source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chat_reading", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", action="store_true", help="print each case's reading")
    args = parser.parse_args(argv)
    rows = cases()
    print(f"{HELDOUT.name}: {sum(c['kind'] == 'ordinary' for c in rows)} ordinary, "
          f"{sum(c['kind'] == 'rag' for c in rows)} RAG-shaped")
    print(f"{'config':<16} {'ordinary left alone':<22} {'RAG-shaped read':<18}")
    for name, ctx in configs().items():
        read = {str(c["id"]): read_source(ctx, c["messages"], name == "content test")  # type: ignore[arg-type]
                for c in rows}
        ordinary = [c for c in rows if c["kind"] == "ordinary"]
        rag = [c for c in rows if c["kind"] == "rag"]
        alone = sum(not read[str(c["id"])] for c in ordinary)
        found = sum(bool(read[str(c["id"])]) for c in rag)
        print(f"{name:<16} {f'{alone} of {len(ordinary)}':<22} {f'{found} of {len(rag)}':<18}")
        if name == "content test" and ragtruth.available():
            contexts = {f"{task}/{r.source_id}": "\n".join(r.context)
                        for task in ragtruth.TASKS for r in ragtruth.responses(task, ("dev",))}
            kept = sum(holds_material(t) for t in contexts.values())
            print(f"{'':<16} RAGTruth dev part's retrieved contexts passing the content test: "
                  f"{kept} of {len(contexts)}")
        if args.cases:
            for c in rows:
                print(f"    {c['kind']:<9} {c['id']:<32} {read[str(c['id'])] or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
