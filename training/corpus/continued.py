"""A corpus to continue a trained model on: new sets whole, plus a replayed sample of its old mix.

Continuing a model on new examples alone moves it away from what it learned; a random sample of
the mix it was trained on, replayed beside them, holds it in place (as :mod:`focus` does for
chosen domains of one mix). The new examples are the train parts of human-labelled sets the
model has not seen (:mod:`human_sets`: screened against every RAGTruth and FaithBench source,
split train / dev by document) and any further train-part JSONL files (``--extra``, e.g.
generated mix-ups over train-part contexts). The old mix's dev files are copied unchanged, so the
candidate is chosen on the same dev parts as the model it continues; each new set's dev part is
written beside them as ``dev_<set>.jsonl``.

    python -m training.corpus.continued --mix training/output/llm5 --replay 1500 \\
        --faithjudge DATA/FaithJudge --wice DATA/wice --attributionbench DATA/AttributionBench \\
        --out training/output/train/mix
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from collections import Counter
from pathlib import Path

from training.corpus import human_sets, sources
from training.corpus.builder import Example
from training.corpus.splits import read_jsonl, write_jsonl


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.corpus.continued", description=__doc__.splitlines()[0])
    parser.add_argument("--mix", type=Path, required=True, help="the mix the model was trained on (replayed)")
    parser.add_argument("--replay", type=int, default=1500, help="examples of the old mix, drawn at random")
    parser.add_argument("--faithjudge", type=Path, required=True, help="FaithJudge clone (overlap check's sources)")
    parser.add_argument("--wice", type=Path, default=None, help="ryokamoi/wice clone")
    parser.add_argument("--attributionbench", type=Path, default=None, help="OSU-NLP-Group/AttributionBench clone")
    parser.add_argument("--human-repeat", type=int, default=1, help="times each new set's train answer appears")
    parser.add_argument("--extra", type=Path, nargs="*", default=[],
                        help="further train-part examples (JSONL in the corpus format), taken whole")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    index = sources.load_evaluation_sources(args.faithjudge / "eval_data")
    new_sets = human_sets.load_all(index, wice_root=args.wice, attributionbench_root=args.attributionbench)
    args.out.mkdir(parents=True, exist_ok=True)
    new: list[Example] = []
    for labelled in new_sets:
        new.extend(labelled.train * args.human_repeat)
        write_jsonl(iter(labelled.dev), args.out / f"dev_{labelled.name}.jsonl")
    for extra in args.extra:
        rows = read_jsonl(extra)
        if leaked := [e.id for e in rows if e.split != "train"]:
            parser.error(f"--extra {extra}: {len(leaked)} examples not in a train part (e.g. {leaked[0]})")
        new.extend(rows)
    old = read_jsonl(args.mix / "train.jsonl")
    rng = random.Random(args.seed)
    chosen = new + rng.sample(old, min(args.replay, len(old)))
    rng.shuffle(chosen)
    write_jsonl(iter(chosen), args.out / "train.jsonl")
    for dev in sorted(args.mix.glob("dev*.jsonl")):
        shutil.copyfile(dev, args.out / dev.name)
    summary = {
        "train": dict(Counter(e.domain for e in chosen)),
        "train_hallucinated": sum(e.hallucinated for e in chosen),
        "new": dict(Counter(e.domain for e in new)),
        "replayed_from": str(args.mix),
        "human_sets": {p.name: p.counts() | {"removed": list(p.removed_documents)} for p in new_sets},
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    (args.out / "mix.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: summary[k] for k in ("train", "train_hallucinated", "human_sets")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
