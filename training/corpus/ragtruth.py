"""RAGTruth (Niu et al. 2024, MIT): answers real LLMs wrote, with human-labelled unsupported spans.

The data come from the public GitHub repository ``vectara/FaithJudge``, files
``eval_data/ragtruth_{qa,summary,data2txt}.jsonl``: one line per source (QA passages and a
question, a news article, or a JSON business record) with six model responses, each carrying
RAGTruth's span labels. ``python -m training.corpus.ragtruth --faithjudge DIR`` copies the three
files from a clone of that repository into :data:`DEFAULT_DIR`; nothing here reaches a network.

Folds are by ``source_id`` and enforced here:

- even ``source_id``: the **evaluation** half: reported by ``python -m bench.detector_quality``,
  never trained on, never used to tune a threshold or choose a checkpoint
  (:func:`training_examples` refuses it);
- odd ``source_id`` with ``(source_id // 2) % 5 == 0``: **dev** (threshold, aggregation and
  checkpoint choice);
- the other odd ones: **train**.

The detector sees what a RAG application would send the gateway: QA passages as separate
passages and the user's question; a news article as one passage with a summarisation request;
a business record as its JSON text with RAGTruth's data-to-text request.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from training.corpus.builder import Example, LabelSpan

Task = Literal["qa", "summary", "data2txt"]
Fold = Literal["eval", "dev", "train"]
TASKS: tuple[Task, ...] = ("qa", "summary", "data2txt")
DEFAULT_DIR = Path("training/output/ragtruth")
SUMMARY_QUESTION = "Summarize the following news article."
DATA2TXT_QUESTION = (
    "Write an objective overview about the following local business based only on the provided "
    "structured data in the JSON format."
)
_PASSAGE_MARK = re.compile(r"(?:^|\n+)\s*passage \d+:", re.IGNORECASE)


def fold_of(source_id: int) -> Fold:
    if source_id % 2 == 0:
        return "eval"
    return "dev" if (source_id // 2) % 5 == 0 else "train"


@dataclass(frozen=True, slots=True)
class Response:
    """One model response to one source, with its human-labelled unsupported character spans."""

    task: Task
    source_id: int
    model: str
    context: tuple[str, ...]
    question: str
    answer: str
    spans: tuple[tuple[int, int], ...]

    @property
    def fold(self) -> Fold:
        return fold_of(self.source_id)

    @property
    def hallucinated(self) -> bool:
        return bool(self.spans)


def path_of(task: Task, root: Path = DEFAULT_DIR) -> Path:
    return root / f"ragtruth_{task}.jsonl"


def available(root: Path = DEFAULT_DIR) -> bool:
    return all(path_of(t, root).exists() for t in TASKS)


def context_question(task: Task, source: object) -> tuple[tuple[str, ...], str]:
    """The context and question a RAG application would send for one RAGTruth source."""
    if task == "qa":
        assert isinstance(source, dict)
        passages = [p.strip() for p in _PASSAGE_MARK.split(str(source["passages"])) if p.strip()]
        return tuple(passages), str(source["question"]).strip()
    if task == "summary":
        return (str(source).strip(),), SUMMARY_QUESTION
    return (json.dumps(source, ensure_ascii=False, indent=1),), DATA2TXT_QUESTION


def responses(task: Task, folds: tuple[Fold, ...], root: Path = DEFAULT_DIR) -> Iterator[Response]:
    """Every response of ``task`` whose source is in one of ``folds``, in file order."""
    with path_of(task, root).open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            source_id = int(row["source_id"])
            if fold_of(source_id) not in folds:
                continue
            context, question = context_question(task, row["source"])
            for resp in row["responses"]:
                answer = str(resp["response"])
                spans = tuple(
                    sorted(
                        (max(0, int(lab["start"])), min(len(answer), int(lab["end"])))
                        for lab in resp["labels"]
                        if int(lab["end"]) > int(lab["start"])
                    )
                )
                yield Response(task, source_id, str(resp.get("model", "")), context, question, answer, spans)


def training_examples(task: Task, folds: tuple[Fold, ...], root: Path = DEFAULT_DIR) -> Iterator[Example]:
    """Span-labelled examples for training or dev; the evaluation half is refused."""
    if "eval" in folds:
        raise ValueError("the RAGTruth evaluation half (even source_id) is never trained or tuned on")
    for n, r in enumerate(responses(task, folds, root)):
        yield Example(
            id=f"ragtruth-{task}-{r.source_id}-{n}",
            split=r.fold,
            domain=f"ragtruth_{task}",
            context=r.context,
            question=r.question,
            answer=r.answer,
            labels=tuple(LabelSpan(s, e, "unsupported") for s, e in r.spans),
        )


def copy_from(faithjudge: Path, dest: Path = DEFAULT_DIR) -> Path:
    """Copy the three RAGTruth files from a clone of ``vectara/FaithJudge`` into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for task in TASKS:
        source = faithjudge / "eval_data" / f"ragtruth_{task}.jsonl"
        if not source.exists():
            raise FileNotFoundError(f"{source} not found: pass the root of a vectara/FaithJudge clone")
        shutil.copyfile(source, path_of(task, dest))
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.corpus.ragtruth", description=__doc__.splitlines()[0])
    parser.add_argument("--faithjudge", type=Path, required=True, help="root of a vectara/FaithJudge clone")
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    dest = copy_from(args.faithjudge, args.out)
    for task in TASKS:
        counts: dict[str, int] = {}
        for r in responses(task, ("eval", "dev", "train"), dest):
            key = f"{r.fold}/{'hallucinated' if r.hallucinated else 'faithful'}"
            counts[key] = counts.get(key, 0) + 1
        print(task, json.dumps(dict(sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
