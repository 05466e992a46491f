"""A fine-tuning corpus: chosen domains of a training mix whole, plus a replay sample of the rest.

A short run on a few new kinds of example alone moves the model away from everything else it
learned; a random sample of the rest of the mix, replayed beside them, holds it in place. The
dev files are copied unchanged, so the run is chosen on the same dev parts as the mix's.

    python -m training.corpus.focus --mix training/output/llm8 --domains roles_error roles_twin \\
        --replay 1000 --out training/output/llm8-focus
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from collections import Counter
from pathlib import Path

from training.corpus.splits import read_jsonl, write_jsonl


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.corpus.focus", description=__doc__.splitlines()[0])
    parser.add_argument("--mix", type=Path, required=True, help="a training mix (python -m training.corpus.llm_mix)")
    parser.add_argument("--domains", nargs="+", required=True, help="domains taken whole")
    parser.add_argument("--replay", type=int, default=1000, help="examples of the other domains, drawn at random")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    examples = read_jsonl(args.mix / "train.jsonl")
    known = {e.domain for e in examples}
    if missing := sorted(set(args.domains) - known):
        parser.error(f"--domains {missing}: not in {args.mix / 'train.jsonl'} (it has {sorted(known)})")
    focus = [e for e in examples if e.domain in args.domains]
    rest = [e for e in examples if e.domain not in args.domains]
    rng = random.Random(args.seed)
    chosen = focus + rng.sample(rest, min(args.replay, len(rest)))
    rng.shuffle(chosen)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(iter(chosen), args.out / "train.jsonl")
    for dev in sorted(args.mix.glob("dev*.jsonl")):
        shutil.copyfile(dev, args.out / dev.name)
    summary = {"mix": str(args.mix), "focus": dict(Counter(e.domain for e in focus)),
               "replay": dict(Counter(e.domain for e in chosen if e.domain not in args.domains))}
    (args.out / "mix.json").write_text(json.dumps({"train": dict(Counter(e.domain for e in chosen))} | summary,
                                                  indent=2) + "\n")
    print(f"{len(focus)} focus + {len(chosen) - len(focus)} replay examples -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
