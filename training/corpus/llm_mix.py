"""The training mix for answers real LLMs write (``python -m training.corpus.llm_mix``).

- RAGTruth train fold (odd ``source_id``, not dev): LLM answers with human span labels (QA,
  news summaries, data-to-text over JSON records);
- HaluEval QA and dialogue train folds labelled against the right answer (:mod:`relabel`), and
  summaries with their novel-word labels (:mod:`halueval`);
- role, relation, value and modality errors and faithful reformatting planted in real passages
  (RAGTruth train-fold sources and HaluEval train-fold knowledge, :mod:`roles`);
- JSON records of the RAGTruth train fold verbalised, faithfully or with one error (:mod:`records`);
- multi-paragraph answers: two or three restatement examples of different sources joined, with
  their contexts;
- a few template-generator examples (paraphrased numbers, units and dates);
- with ``--faithjudge`` and the clones named, the human-labelled sets of :mod:`human_sets`
  (Quintd-1, XSum hallucination annotations, the accuracy shared task), screened against
  every RAGTruth and FaithBench source and split train / dev by document.

Writes ``train.jsonl``, ``dev.jsonl`` (RAGTruth dev fold and HaluEval dev fold, relabelled),
``dev_<set>.jsonl`` for each human-labelled set (its dev part, kept apart) and ``mix.json``
(counts, documents the overlap check removed). The evaluation folds of RAGTruth and HaluEval
are never read as training data.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

from training.corpus import halueval, human_sets, ragtruth, records, relabel, roles, sources
from training.corpus.builder import Example, LabelSpan
from training.corpus.splits import generate, write_jsonl


def _passage_sources(rag_root: Path, hal_root: Path, rng: random.Random, n: int) -> list[tuple[str, str, str]]:
    sources: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for task in ("qa", "summary"):
        for r in ragtruth.responses(task, ("train",), rag_root):
            for k, passage in enumerate(r.context):
                key = f"{r.source_id}-{k}"
                if key not in seen and len(passage.split()) >= 40:
                    seen.add(key)
                    sources.append((f"roles-rt{task}-{key}", passage, r.question))
    for i, row in halueval.training_items("qa", ("train",), hal_root):
        sources.append((f"roles-hq-{i}", row["knowledge"], row["question"]))
        if len(sources) > 6 * n:
            break
    rng.shuffle(sources)
    return sources[:n]


def _joined(parts: list[Example], ident: str) -> Example:
    """One multi-paragraph answer over the union of the parts' contexts."""
    answer = ""
    labels: list[LabelSpan] = []
    for part in parts:
        if answer:
            answer += "\n\n"
        labels.extend(LabelSpan(s.start + len(answer), s.end + len(answer), s.kind) for s in part.labels)
        answer += part.answer
    context = tuple(p for part in parts for p in part.context)
    question = " ".join(part.question for part in parts if part.question)[:300]
    return Example(ident, "train", "multi_paragraph", context, question, answer, tuple(labels))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.corpus.llm_mix", description=__doc__.splitlines()[0])
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--out", type=Path, default=Path("training/output/llm"))
    parser.add_argument(
        "--ragtruth-repeat", type=int, default=1,
        help="times each RAGTruth train-fold answer appears (the only human-labelled LLM answers)",
    )
    parser.add_argument("--qa", type=int, default=1500, help="HaluEval QA train items (relabelled)")
    parser.add_argument("--dialogue", type=int, default=500, help="HaluEval dialogue train items (relabelled)")
    parser.add_argument("--summarization", type=int, default=300, help="HaluEval summarization train items")
    parser.add_argument("--roles", type=int, default=1600, help="restatements with role/relation errors")
    parser.add_argument("--role-twins", action="store_true",
                        help="each role/relation error also with its unchanged faithful twin (a minimal pair)")
    parser.add_argument("--records", type=int, default=3, help="verbalisations per train-fold JSON record")
    parser.add_argument("--multi", type=int, default=250, help="multi-paragraph answers")
    parser.add_argument("--synthetic", type=int, default=400, help="template-generator examples")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--faithjudge", type=Path, default=None, help="FaithJudge clone (overlap check's sources)")
    parser.add_argument("--quintd", type=Path, default=None, help="kasnerz/quintd clone")
    parser.add_argument(
        "--xsum", type=Path, default=None, help="google-research-datasets/xsum_hallucination_annotations clone"
    )
    parser.add_argument("--aggrefact", type=Path, default=None, help="Liyan06/AggreFact clone (the XSum articles)")
    parser.add_argument("--rotowire", type=Path, default=None, help="ehudreiter/accuracySharedTask clone")
    parser.add_argument("--wice", type=Path, default=None, help="ryokamoi/wice clone")
    parser.add_argument("--attributionbench", type=Path, default=None, help="OSU-NLP-Group/AttributionBench clone")
    parser.add_argument(
        "--human-repeat", type=int, default=1, help="times each human-labelled set's train answer appears"
    )
    args = parser.parse_args(argv)
    roots = (args.quintd, args.xsum, args.rotowire, args.wice, args.attributionbench)
    if any(r is not None for r in roots) and args.faithjudge is None:
        parser.error("the human-labelled sets need --faithjudge: their sources are screened against RAGTruth "
                     "and FaithBench")

    if not ragtruth.available(args.ragtruth):
        parser.error(f"RAGTruth files not in {args.ragtruth}: run python -m training.corpus.ragtruth --faithjudge DIR")
    hal_root = halueval.fetch(args.halueval)
    rng = random.Random(args.seed)
    train: list[Example] = []
    for task in ragtruth.TASKS:
        train.extend(list(ragtruth.training_examples(task, ("train",), args.ragtruth)) * args.ragtruth_repeat)
    train.extend(relabel.examples("qa", ("train",), hal_root, limit=args.qa))
    train.extend(relabel.examples("dialogue", ("train",), hal_root, limit=args.dialogue))
    train.extend(halueval.examples("summarization", ("train",), hal_root, limit=args.summarization))
    planted = list(roles.examples(_passage_sources(args.ragtruth, hal_root, rng, args.roles), rng,
                                  twins=args.role_twins))
    train.extend(planted)
    record_sources: dict[int, dict[str, object]] = {}
    with ragtruth.path_of("data2txt", args.ragtruth).open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if ragtruth.fold_of(int(row["source_id"])) == "train":
                record_sources[int(row["source_id"])] = row["source"]
    train.extend(records.examples(
        [(f"record-{k}", v) for k, v in sorted(record_sources.items())], rng,
        per_record=args.records, question=ragtruth.DATA2TXT_QUESTION,
    ))
    for n in range(args.multi):
        parts = rng.sample(planted, rng.choice((2, 3)))
        if sum(bool(p.labels) for p in parts) > 1:  # at most one error per answer
            parts = [p for p in parts if not p.labels] + [next(p for p in parts if p.labels)]
        if len(parts) >= 2:
            train.append(_joined(parts, f"multi-{n}"))
    train.extend(generate("train", args.synthetic, seed=args.seed, word_budget=200))
    human: list[human_sets.SetParts] = []
    if args.faithjudge is not None:
        index = sources.load_evaluation_sources(args.faithjudge / "eval_data")
        human = human_sets.load_all(
            index, quintd_root=args.quintd, xsum_root=args.xsum, aggrefact_root=args.aggrefact,
            rotowire_root=args.rotowire, wice_root=args.wice, attributionbench_root=args.attributionbench,
        )
        for labelled in human:
            train.extend(labelled.train * args.human_repeat)
            write_jsonl(iter(labelled.dev), args.out / f"dev_{labelled.name}.jsonl")
            print(f"{labelled.name}: removed {len(labelled.removed_documents)} source documents "
                  f"({labelled.removed_examples} answers) overlapping RAGTruth/FaithBench sources", flush=True)
    rng.shuffle(train)
    write_jsonl(iter(train), args.out / "train.jsonl")

    dev: list[Example] = []
    for task in ragtruth.TASKS:
        dev.extend(ragtruth.training_examples(task, ("dev",), args.ragtruth))
    dev.extend(relabel.examples("qa", ("dev",), hal_root, limit=200))
    write_jsonl(iter(dev), args.out / "dev.jsonl")
    mix = {
        "train": dict(Counter(ex.domain for ex in train)),
        "train_hallucinated": sum(ex.hallucinated for ex in train),
        "dev": dict(Counter(ex.domain for ex in dev)),
        "human_sets": {p.name: p.counts() | {"removed": list(p.removed_documents)} for p in human},
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    (args.out / "mix.json").write_text(json.dumps(mix, indent=2))
    print(json.dumps(mix, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
