"""The human-labelled sets beyond RAGTruth, screened and split, for the training mix.

Each set comes from a clone of its public repository (``training/README.md`` lists them with
licences and counts): Quintd-1 (data-to-text, :mod:`quintd`), the XSum hallucination
annotations (news summaries, :mod:`xsum_faith`, articles from AggreFact's files), and the
accuracy shared task's training texts (basketball reports, :mod:`rotowire_accuracy`), WiCE's
token labels on Wikipedia claims (:mod:`wice`) and AttributionBench's dev split (claims of LLM
answers against their references, :mod:`attributionbench`). Every
source document goes through :func:`training.corpus.sources.screen`: those that overlap an
evaluation source are dropped (counted), the rest split train / dev by document.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from training.corpus import attributionbench, quintd, rotowire_accuracy, wice, xsum_articles, xsum_faith
from training.corpus.builder import Example
from training.corpus.sources import EvaluationSources, screen


@dataclass(slots=True)
class SetParts:
    """One set's examples by part, and what the overlap check removed."""

    name: str
    train: list[Example] = field(default_factory=list)
    dev: list[Example] = field(default_factory=list)
    documents: int = 0
    removed_documents: tuple[str, ...] = ()
    removed_examples: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "documents": self.documents,
            "removed_documents": len(self.removed_documents),
            "removed_examples": self.removed_examples,
            "train": len(self.train),
            "train_hallucinated": sum(e.hallucinated for e in self.train),
            "dev": len(self.dev),
            "dev_hallucinated": sum(e.hallucinated for e in self.dev),
        }


def split_set(name: str, keyed: Iterable[tuple[str, Example]], index: EvaluationSources) -> SetParts:
    """Screen each source document of ``keyed`` once, then put its answers in its part."""
    items = list(keyed)
    documents: dict[str, str] = {}
    for key, example in items:
        documents.setdefault(key, "\n".join(example.context))
    screened = screen(documents.items(), index)
    parts = SetParts(name, documents=len(documents), removed_documents=screened.removed)
    for key, example in items:
        part = screened.kept.get(key)
        if part is None:
            parts.removed_examples += 1
            continue
        (parts.dev if part == "dev" else parts.train).append(replace(example, split=part))
    return parts


def load_all(
    index: EvaluationSources,
    *,
    quintd_root: Path | None = None,
    xsum_root: Path | None = None,
    aggrefact_root: Path | None = None,
    rotowire_root: Path | None = None,
    wice_root: Path | None = None,
    attributionbench_root: Path | None = None,
) -> list[SetParts]:
    """Every set whose clone is given, screened against ``index`` and split by document."""
    out: list[SetParts] = []
    if quintd_root is not None:
        out.append(split_set("quintd", quintd.load(quintd_root), index))
    if xsum_root is not None:
        if aggrefact_root is None:
            raise ValueError("the XSum annotations need AggreFact's files for their articles (--aggrefact)")
        out.append(split_set("xsum_faith", xsum_faith.load(xsum_root, xsum_articles.articles(aggrefact_root)), index))
    if rotowire_root is not None:
        out.append(split_set("rotowire_accuracy", rotowire_accuracy.load(rotowire_root), index))
    if wice_root is not None:
        out.append(split_set("wice", wice.load(wice_root), index))
    if attributionbench_root is not None:
        out.append(split_set("attributionbench", attributionbench.load(attributionbench_root), index))
    return out
