"""Which source documents of a new labelled set may be trained on, and which part each is in.

Two rules every added set goes through:

- **No evaluation source leaks in.** A document that shares 30% or more of its 8-word
  sequences with any source of the RAGTruth files (both halves: the even half is evaluation,
  and the odd half's dev part chooses checkpoints) or of FaithJudge's FaithBench summaries is
  dropped, with every answer written over it. XSum articles recur across XSum-derived sets,
  so this is measured, not assumed.
- **Train / dev by source document**, as RAGTruth's odd half is split: every answer over one
  document lands in the same part (answers over one article share most of their words, so
  splitting answers would leak the dev part into training). The part is a stable hash of the
  document's key, one in five to dev.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Part = Literal["train", "dev"]
SHINGLE_WORDS = 8
OVERLAP_LIMIT = 0.30
DEV_ONE_IN = 5
_WORD = re.compile(r"[a-z0-9]+")


def part_of(document_key: str) -> Part:
    """The part every answer over this source document belongs to."""
    return "dev" if zlib.crc32(document_key.encode("utf-8")) % DEV_ONE_IN == 0 else "train"


def shingles(text: str, n: int = SHINGLE_WORDS) -> set[int]:
    """Hashes of the lowercased n-word sequences of ``text`` (case and punctuation ignored)."""
    words = _WORD.findall(text.lower())
    return {hash(" ".join(words[i : i + n])) for i in range(len(words) - n + 1)}


@dataclass(slots=True)
class EvaluationSources:
    """The 8-word sequences of every source a new set must not share."""

    seen: set[int] = field(default_factory=set)
    documents: int = 0

    def add(self, text: str) -> None:
        self.seen |= shingles(text)
        self.documents += 1

    def overlap(self, text: str) -> float:
        """Share of ``text``'s 8-word sequences found in an evaluation source (0 when it has none)."""
        own = shingles(text)
        return len(own & self.seen) / len(own) if own else 0.0

    def blocks(self, text: str) -> bool:
        return self.overlap(text) >= OVERLAP_LIMIT


def _source_texts(row: dict[str, object]) -> Iterator[str]:
    source = row["source"]
    if isinstance(source, dict):
        yield " ".join(str(v) for v in source.values())
    else:
        yield str(source)


def load_evaluation_sources(faithjudge_eval: Path) -> EvaluationSources:
    """Every source of ``eval_data/ragtruth_*.jsonl`` and ``eval_data/faithbench_summary.jsonl``."""
    names = ("ragtruth_qa.jsonl", "ragtruth_summary.jsonl", "ragtruth_data2txt.jsonl", "faithbench_summary.jsonl")
    index = EvaluationSources()
    for name in names:
        path = faithjudge_eval / name
        if not path.exists():
            raise FileNotFoundError(f"{path}: the overlap check needs every RAGTruth and FaithBench file")
        with path.open(encoding="utf-8") as f:
            for line in f:
                for text in _source_texts(json.loads(line)):
                    index.add(text)
    return index


@dataclass(frozen=True, slots=True)
class Screened:
    """The documents a set keeps, per part, and the keys of those the overlap check removed."""

    kept: dict[str, Part]
    removed: tuple[str, ...]


def screen(documents: Iterable[tuple[str, str]], index: EvaluationSources) -> Screened:
    """Part of each ``(key, text)`` document, or its removal when it overlaps an evaluation source."""
    kept: dict[str, Part] = {}
    removed: list[str] = []
    for key, text in documents:
        if index.blocks(text):
            removed.append(key)
        else:
            kept[key] = part_of(key)
    return Screened(kept, tuple(removed))
