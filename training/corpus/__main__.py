"""``python -m training.corpus --out DIR``: write train/test/heldout JSONL files."""

from __future__ import annotations

import argparse
from pathlib import Path

from training.corpus.splits import SplitName, generate, write_jsonl


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.corpus", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("training/output/corpus"))
    parser.add_argument("--train", type=int, default=12000)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--heldout", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--word-budget", type=int, default=220, help="passage words per example (fits 384 tokens)")
    args = parser.parse_args(argv)
    sizes: tuple[tuple[SplitName, int], ...] = (("train", args.train), ("test", args.test), ("heldout", args.heldout))
    for split, n in sizes:
        count = write_jsonl(
            generate(split, n, seed=args.seed, word_budget=args.word_budget), args.out / f"{split}.jsonl"
        )
        print(f"{split}: {count} examples -> {args.out / f'{split}.jsonl'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
