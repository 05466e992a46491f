"""WiCE (Kamoi et al., EMNLP 2023; annotations ODC-BY, text CC BY-SA / Common Crawl terms): token labels.

From the GitHub repository ``ryokamoi/wice``: Wikipedia sentences (claims) beside the web page
they cite, judged by people. Files read (nothing else):

- ``data/non_supported_tokens/{train,dev}.jsonl``: sub-claims judged *partially supported*, with
  the tokens the cited page does not support (``claim_tokens`` / ``non_supported_spans``, one
  boolean per token): span labels, each example hallucinated;
- ``data/entailment_retrieval/claim/dev.jsonl``: whole claims with their entailment label; those
  judged *supported* are faithful examples over the same kind of page (the repository holds no
  train file of this part, and the partially/not supported claims have no token labels).

The ``test.jsonl`` files are WiCE's test split and are never read. The context is the cited
page's sentences less the crawler's ``(meta data)`` lines; the question asks about the claim's
Wikipedia article, as a reader of that article would. The source document is the claim (its id
without the sub-claim suffix): every sub-claim of one claim cites the same page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from training.corpus.builder import Example, LabelSpan

TOKENS = Path("data/non_supported_tokens")
CLAIMS = Path("data/entailment_retrieval/claim")
PARTS = ("train", "dev")  # WiCE's own test split is never read
_META = "(meta data)"


def token_spans(claim: str, tokens: Sequence[str], flags: Sequence[bool]) -> list[tuple[int, int]]:
    """Character runs of ``claim`` covered by the flagged tokens (adjacent flagged tokens join).

    The tokens are found left to right in the claim; a token the claim does not contain (a
    tokenizer's rewrite) ends the mapping, and the spans found before it are kept.
    """
    spans: list[tuple[int, int]] = []
    at = 0
    previous_flagged = False
    for token, flagged in zip(tokens, flags, strict=True):
        found = claim.find(token, at)
        if found < 0:
            break
        end = found + len(token)
        if flagged:
            if previous_flagged and spans:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((found, end))
        previous_flagged = flagged
        at = end
    return spans


def document_key(claim_id: str) -> str:
    return "wice/" + claim_id.split("-")[0]


def _context(evidence: Sequence[str]) -> tuple[str, ...]:
    kept = [s.strip() for s in evidence if s.strip() and not s.startswith(_META)]
    return ("\n".join(kept),) if kept else ()


def _question(meta: dict[str, str]) -> str:
    title = meta.get("claim_title", "").strip()
    return f"Tell me about {title}." if title else "What does the source say?"


def load(root: Path) -> Iterator[tuple[str, Example]]:
    """``(document key, example)`` for WiCE's train and dev rows (its test split is not read)."""
    for part in PARTS:
        with (root / TOKENS / f"{part}.jsonl").open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                context = _context(row["evidence"])
                spans = token_spans(row["claim"], row["claim_tokens"], row["non_supported_spans"])
                if not context or not spans:
                    continue
                meta = row["meta"]
                yield document_key(meta["id"]), Example(
                    id=f"wice-{meta['id']}", split="train", domain="wice", context=context,
                    question=_question(meta), answer=row["claim"],
                    labels=tuple(LabelSpan(s, e, "unsupported") for s, e in spans),
                )
    supported = root / CLAIMS / "dev.jsonl"
    if supported.exists():
        with supported.open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                context = _context(row["evidence"])
                if row["label"] != "supported" or not context:
                    continue
                meta = row["meta"]
                yield document_key(meta["id"]), Example(
                    id=f"wice-{meta['id']}", split="train", domain="wice", context=context,
                    question=_question(meta), answer=row["claim"], labels=(),
                )
