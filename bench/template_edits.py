"""Templates read through their users' edits, and ordinary chat left alone: how many edited copies
of the built-in templates the shipped config reads (with the passages and question a copy holds),
and how many ordinary messages it reads as a template.

Data: RAGTruth (Niu et al. 2024, MIT) via ``vectara/FaithJudge`` ``eval_data/`` (placed by
``python -m training.corpus.ragtruth --faithjudge DIR``).

Edited copies: each built-in template whose opening the gateway compares word by word
(:mod:`truthlens.gateway.apis.context.tolerant`), rendered with a RAGTruth QA item of the dev part
(odd ``source_id``) after a seeded random edit of its opening: one word inserted, dropped or
replaced (the word drawn from RAGTruth answers), two such edits, and one edit per ten words.
Then hand-written rewordings (:data:`REWORDED`, written before any measurement, never tuned on).
A copy counts as read when its passages and question come out as rendered. An edit that removes
a word naming the context (``context``, ``documents``, ...) is refused by design; its share is
printed beside the rate.

Ordinary chat: every RAGTruth question and response (all folds) as a user message, and each
response as a system prompt before its question, through the chat translator with the shipped
config; counted when read as context (any source), and when a skip would name a nearest template.

Run: ``python -m bench.template_edits [--items 30] [--seed 7]`` (in process; no stack).
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Sequence

from training.corpus import ragtruth
from truthlens.gateway.apis.chat.body import decode_chat_request
from truthlens.gateway.apis.context import passages as split_passages
from truthlens.gateway.apis.context.settings import ContextSettings
from truthlens.gateway.apis.context.templates import Template
from truthlens.gateway.apis.context.tolerant import CONTEXT_NOUNS, TolerantReader, tolerant_readers
from truthlens.gateway.policy.config import load_config
from truthlens.testing import launch

_SLOT = re.compile(r"\{(context|question|answer|any)\}")
# Rewordings a user might write of a template's opening (name → its opening reworded), written
# before the matcher was measured.
REWORDED = {
    "langchain-stuff-documents": "You are an assistant for question-answering tasks. Use the following pieces of "
                                 "retrieved context to answer the question. If you do not know the answer, say that "
                                 "you don't know. Use at most three sentences and keep the answer concise.",
    "langchain-rag-prompt": "You are an assistant for question-answering tasks. Use the following pieces of "
                            "retrieved context to answer the question. If you don't know the answer, just say you "
                            "don't know. Keep the answer concise, three sentences maximum.\nQuestion:",
    "langchain-v1-rag-chain": "You are a helpful AI assistant. Use the following context in your reply:",
    "langchain-lcel-rag": "Answer the question based only on the context below:",
    "langchain-stuff-qa": "Use the following pieces of context to answer the question at the end. If you don't "
                          "know the answer, just say you don't know; do not try to make up an answer.",
    "haystack-get-started": "Given these documents, please answer the question.\nDocuments:",
    "llamaindex-condense-plus-context": "The following is a friendly conversation between a user and an AI "
                                       "assistant.\nThe assistant is talkative and gives lots of specific details "
                                       "from its context.\nIf the assistant does not know the answer to a question, "
                                       "it says it does not know.\n\nHere are the relevant documents for the context:",
}


def render(t: Template, opening: str, passages: Sequence[str], question: str, answer: str) -> list[tuple[str, str]]:
    """The messages of ``t`` rendered with ``opening`` in place of its opening literal."""
    first = _SLOT.search(t.text)
    assert first is not None
    text = opening + t.text[len(_literal(t)):].replace("{{", "{").replace("}}", "}")
    # Haystack's Jinja loop puts each document after a blank line and four spaces.
    context = "".join(f"\n\n    {p}" for p in passages) if t.separator == "indented" else "\n\n".join(passages)
    values = {"context": context, "question": question, "answer": answer,
              "any": "You are a helpful assistant."}
    text = _SLOT.sub(lambda m: values[m.group(1)], text)
    return [(t.role, text)] + ([("user", question)] if t.role == "system" else [])


def _literal(t: Template) -> str:
    first = _SLOT.search(t.text)
    assert first is not None
    return t.text[:first.start()]


def edit(literal: str, rng: random.Random, vocabulary: Sequence[str], n: int) -> str:
    """``literal`` with ``n`` words inserted, dropped or replaced, its line breaks kept."""
    tokens = re.findall(r"\S+|\s+", literal)
    for _ in range(n):
        at = [i for i, tok in enumerate(tokens) if tok.strip()]
        i = rng.choice(at)
        kind = rng.choice(("insert", "drop", "replace"))
        if kind == "insert":
            tokens[i] = f"{rng.choice(vocabulary)} {tokens[i]}"
        elif kind == "drop" and len(at) > 1:
            tokens[i] = ""
        else:
            tokens[i] = rng.choice(vocabulary)
    return "".join(tokens)


def read(messages: list[tuple[str, str]], ctx: ContextSettings) -> tuple[str, tuple[str, ...], str, str]:
    body = json.dumps({"model": "m", "messages": [{"role": r, "content": c} for r, c in messages]}).encode()
    request = decode_chat_request(body).read(ctx)
    return request.context_source, request.passages, request.question, getattr(request, "near_template", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.template_edits", description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=30, help="dev QA items per template and edit (default 30)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    ctx = load_config(launch.SHIPPED_CONFIG).hallucination.context
    rng = random.Random(args.seed)
    items = [r for r in ragtruth.responses("qa", ("dev",)) if r.context][: args.items]
    vocabulary = sorted({w for r in items for w in re.findall(r"[A-Za-z]+", r.answer)})
    readers: list[TolerantReader] = list(tolerant_readers(ctx.templates))
    print(f"Edited copies ({len(items)} RAGTruth dev QA items, seed {args.seed}); read = passages and question as "
          "rendered:")
    print("| template | words | as shipped | 1 edit | 2 edits | 1 per 10 words | reworded | anchor word removed |")
    print("|---|---|---|---|---|---|---|---|")
    totals: Counter[str] = Counter()
    for reader in readers:
        t = reader.template
        words = _literal(t).split()
        row = [t.name, str(len(words))]
        anchored = 0
        columns = (("as shipped", 0), ("1 edit", 1), ("2 edits", 2), ("1 per 10 words", max(1, len(words) // 10)))
        for column, n in columns:
            hits = 0
            for item in items:
                edited = edit(_literal(t), rng, vocabulary, n)
                anchored += not all(w in edited.split() for w in words if _bare(w) in CONTEXT_NOUNS)
                hits += _read_as_rendered(t, edited, item, ctx)
            row.append(f"{hits}/{len(items)}")
            totals[column] += hits
            totals["n " + column] += len(items)
        if t.name in REWORDED:
            hits = sum(_read_as_rendered(t, REWORDED[t.name] + _tail_space(t), item, ctx) for item in items)
            row.append(f"{hits}/{len(items)}")
            totals["reworded"] += hits
            totals["n reworded"] += len(items)
        else:
            row.append("—")
        row.append(str(anchored))
        print("| " + " | ".join(row) + " |")
    for column in ("as shipped", "1 edit", "2 edits", "1 per 10 words", "reworded"):
        print(f"{column}: {totals[column]}/{totals['n ' + column]} read")
    false_positives(ctx)
    return 0


def _bare(word: str) -> str:
    return word.lower().strip(":.,;\"'")


def _tail_space(t: Template) -> str:
    literal = _literal(t)
    return literal[len(literal.rstrip()):]


def _read_as_rendered(t: Template, opening: str, item: ragtruth.Response, ctx: ContextSettings) -> bool:
    messages = render(t, opening, item.context, item.question, item.answer)
    _, passages, question, _ = read(messages, ctx)
    expected = tuple(p for c in item.context for p in split_passages.split(c, t.separator))
    want_question = t.instruction if "{question}" not in t.text and t.instruction else item.question
    return set(expected) <= set(passages) and question.strip() == want_question.strip()


def false_positives(ctx: ContextSettings) -> None:
    questions: set[str] = set()
    answers: dict[str, str] = {}
    for task in ragtruth.TASKS:
        for r in ragtruth.responses(task, ("eval", "dev", "train")):
            if task == "qa":
                questions.add(r.question)
            answers[r.answer] = r.question
    shapes = {
        "questions as user messages": [[("user", q)] for q in questions],
        "responses as user messages": [[("user", a)] for a in answers],
        "responses as system prompts before their question": [[("system", a), ("user", q or "Go on.")]
                                                               for a, q in answers.items()],
    }
    print("\nOrdinary chat (RAGTruth, all folds; shipped config, chat translator):")
    for name, cases in shapes.items():
        read_as: Counter[str] = Counter()
        near = 0
        for messages in cases:
            source, _, _, nearest = read(messages, ctx)
            if source:
                read_as[source] += 1
            near += bool(nearest)
        print(f"  {name}: {sum(read_as.values())} of {len(cases)} read as context {dict(read_as) or ''}; "
              f"{near} told a nearest template")


if __name__ == "__main__":
    raise SystemExit(main())
