"""Quintd-1 (Kasner & Dušek, ACL 2024; MIT): data-to-text answers real LLMs wrote, span-labelled by people.

From the GitHub repository ``kasnerz/quintd``: 2,000 outputs of GPT-3.5, Llama-2, Mistral and
Zephyr over 100 records in each of five domains (ice-hockey games as JSON, phone specs, weather
forecasts, Wikidata entities as Markdown-like lists, OWID time series as CSV), each annotated by
one crowd worker with character spans of four kinds. Files read (nothing else):

- ``data/quintd-1/annotations/human/*.jsonl``: one line per output, ``dataset``, ``model``,
  ``table_idx`` and ``annotations`` (``type``, ``start``, ``text``);
- ``data/quintd-1/outputs/test/<domain>/default/<model>.json``: ``generated[table_idx]``, the
  prompt the model got (``in``, the record between three-backtick fences) and its output (``out``).

The record is the context and the prompt's instruction the question: what a gateway in front of
a data-to-text application sees. Types 0 (incorrect), 1 (not checkable) and 2 (misleading) are
what the detector flags — a claim the record does not support; type 3 (other: grammar, style,
repetition) is not a support error and stays unlabelled. The source document is the record
(domain and index), shared by the four models' outputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from training.corpus.builder import Example, LabelSpan

ANNOTATIONS = Path("data/quintd-1/annotations/human")
OUTPUTS = Path("data/quintd-1/outputs/test")
UNSUPPORTED_TYPES = frozenset({0, 1, 2})
_FENCE = "```"


def split_prompt(prompt: str) -> tuple[str, str]:
    """``(record, instruction)`` of a Quintd prompt: the fenced data and the words around it."""
    first = prompt.find(_FENCE)
    last = prompt.rfind(_FENCE)
    if first < 0 or last <= first:
        raise ValueError("Quintd prompt without a fenced data block")
    record = prompt[first + len(_FENCE) : last].strip("\n")
    before, after = prompt[:first].strip().removesuffix(":"), prompt[last + len(_FENCE) :].strip()
    instruction = " ".join(f"{before}. {after}".split())
    return record, instruction


def _span(output: str, annotation: dict[str, object]) -> tuple[int, int] | None:
    """The annotated characters in ``output``; looked up nearby when the offset is off (one case in 5,500)."""
    text = str(annotation["text"])
    start = int(str(annotation["start"]))
    if output[start : start + len(text)] == text:
        return start, start + len(text)
    found = output.find(text, max(0, start - 40))
    return (found, found + len(text)) if found >= 0 and text else None


def document_key(domain: str, table_idx: int) -> str:
    return f"quintd/{domain}/{table_idx}"


def load(root: Path) -> Iterator[tuple[str, Example]]:
    """``(document key, example)`` for every human-annotated Quintd-1 output under ``root`` (a clone)."""
    outputs: dict[tuple[str, str], list[dict[str, str]]] = {}
    files = sorted((root / ANNOTATIONS).glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{root / ANNOTATIONS}: no Quintd human annotations (clone kasnerz/quintd)")
    for path in files:
        with path.open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                domain, model, idx = str(row["dataset"]), str(row["model"]), int(row["table_idx"])
                if (domain, model) not in outputs:
                    generated = json.loads((root / OUTPUTS / domain / "default" / f"{model}.json").read_text())
                    outputs[domain, model] = generated["generated"]
                item = outputs[domain, model][idx]
                answer = item["out"].strip()
                shift = item["out"].find(answer)
                record, instruction = split_prompt(item["in"])
                spans = []
                for annotation in row["annotations"]:
                    if int(annotation["type"]) not in UNSUPPORTED_TYPES:
                        continue
                    span = _span(item["out"], annotation)
                    if span is not None and span[1] - shift > 0:
                        start, end = max(0, span[0] - shift), min(len(answer), span[1] - shift)
                        spans.append(LabelSpan(start, end, "unsupported"))
                yield document_key(domain, idx), Example(
                    id=f"quintd-{domain}-{idx}-{model}",
                    split="train",
                    domain=f"quintd_{domain}",
                    context=(record,),
                    question=instruction,
                    answer=answer,
                    labels=tuple(sorted(spans, key=lambda s: s.start)),
                )
