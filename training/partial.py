"""A bigger encoder on a CPU: its lower layers frozen and run once, only its top layers trained.

A base-size encoder (all-mpnet-base-v2, 110M parameters, from PyPI) costs 2.2 s per 512-token
training row on two cores, about ten hours per pass over the shipped mix: too slow for a full
fine-tune there. Its lower layers are therefore
frozen: each training and dev row goes through them once and their output is cached on disk
(float16, one memory-mapped file), and every pass trains only the top ``--trainable-layers`` and
the classifier on those cached states. The rows are the serving planner's rows in the base's own
tokenizer (``training/rows.py``), so the result exports and serves like any other checkpoint.

Each epoch scores the dev parts as ``training/dev_check.py`` does (an answer's highest token
probability, AUROC per dev set) and the best epoch is kept. ``--reference`` scores another
checkpoint on the same dev answers, and both models' dev scores are written in the format
``python -m training.compare`` reads, so the choice rests on a paired interval.

    python -m training.partial --base BASE_DIR --corpus training/output/llm10 \\
        --out training/output/mpnet-top2 --trainable-layers 2 --cap 50 --whole ragtruth --dev-cap 60 \\
        --epochs 1 --lr 1.5e-4 --reference training/output/run9
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForTokenClassification

from training.batches import collate
from training.corpus.splits import read_jsonl
from training.dev_check import (
    DevAnswer,
    content_key,
    flat_rows,
    format_scores,
    peaks_by_answer,
    read_probabilities,
    same_answers,
    scores_by_group,
)
from training.encode import IGNORE, Encoded
from training.score_dev import checkpoint_peaks, out_of_fold
from training.train import _save, load_rows, model_dev_answers, row_builder, save_rows
from truthlens.detector.encoding import TextEncoder

BATCH = 16


class _Given(torch.nn.Module):
    """Stands in for the embeddings: the cached lower-layer states come in as ``inputs_embeds``."""

    def forward(self, input_ids: Any = None, inputs_embeds: Any = None, **_: Any) -> torch.Tensor:
        return inputs_embeds


class Split:
    """A model cut after its first ``frozen`` layers: the bottom to cache, the top to train."""

    def __init__(self, model: Any, frozen: int) -> None:
        self.model = model
        self.core = model.base_model
        self.layers = list(self.core.encoder.layer)
        self.embeddings = self.core.embeddings
        if not 0 < frozen < len(self.layers):
            raise ValueError(f"--trainable-layers must leave 1..{len(self.layers) - 1} layers frozen")
        self.frozen = frozen
        for p in model.parameters():
            p.requires_grad_(False)
        for layer in self.layers[frozen:]:
            for p in layer.parameters():
                p.requires_grad_(True)
        for p in model.classifier.parameters():
            p.requires_grad_(True)

    def bottom(self) -> None:
        self.core.embeddings = self.embeddings
        self.core.encoder.layer = torch.nn.ModuleList(self.layers[: self.frozen])

    def top(self) -> None:
        self.core.embeddings = _Given()
        self.core.encoder.layer = torch.nn.ModuleList(self.layers[self.frozen :])

    def whole(self) -> Any:
        self.core.embeddings = self.embeddings
        self.core.encoder.layer = torch.nn.ModuleList(self.layers)
        return self.model

    def trainable(self) -> list[torch.nn.Parameter]:
        # From the layers themselves: the model holds only the bottom ones while the cache fills.
        top = [p for layer in self.layers[self.frozen :] for p in layer.parameters()]
        return top + list(self.model.classifier.parameters())


class StateCache:
    """Each row's lower-layer output, float16, in one memory-mapped file (resumable)."""

    def __init__(self, path: Path, lengths: list[int], hidden: int, key: dict[str, object]) -> None:
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.path, self.meta = path, path.with_suffix(".json")
        self.key = key | {"rows": len(lengths), "tokens": int(self.offsets[-1]), "hidden": hidden}
        done = 0
        if self.meta.exists() and path.exists():
            saved = json.loads(self.meta.read_text())
            if saved["key"] == self.key:
                done = saved["done"]
        mode = "r+" if done else "w+"
        self.states = np.memmap(path, dtype=np.float16, mode=mode, shape=(int(self.offsets[-1]), hidden))
        self.done = done

    def fill(self, split: Split, rows: list[Encoded], pad_id: int, label: str) -> None:
        """Runs the frozen layers over the rows not cached yet, in order, saving progress as it goes."""
        split.bottom()
        split.model.eval()
        started, last, first = time.monotonic(), time.monotonic(), self.done
        with torch.no_grad():
            for start in range(self.done, len(rows), BATCH):
                chunk = rows[start : start + BATCH]
                batch = collate(chunk, pad_id, torch.device("cpu"))
                ids, mask = batch["input_ids"], batch["attention_mask"]
                hidden = split.core(input_ids=ids, attention_mask=mask).last_hidden_state
                for j, row in enumerate(chunk):
                    a = self.offsets[start + j]
                    self.states[a : a + len(row.input_ids)] = hidden[j, : len(row.input_ids)].numpy()
                self.done = start + len(chunk)
                if time.monotonic() - last > 60 or self.done == len(rows):
                    self.states.flush()
                    self.meta.write_text(json.dumps({"key": self.key, "done": self.done}))
                    rate = (self.done - first) / max(time.monotonic() - started, 1e-9)
                    print(f"{label}: cached {self.done}/{len(rows)} rows ({rate:.2f} rows/s)", flush=True)
                    last = time.monotonic()

    def batch(self, rows: list[Encoded], indices: list[int]) -> dict[str, torch.Tensor]:
        width = max(len(rows[i].input_ids) for i in indices)
        states = torch.zeros(len(indices), width, self.states.shape[1])
        mask = torch.zeros(len(indices), width, dtype=torch.long)
        labels = torch.full((len(indices), width), IGNORE, dtype=torch.long)
        for j, i in enumerate(indices):
            n = len(rows[i].input_ids)
            a = self.offsets[i]
            states[j, :n] = torch.from_numpy(np.asarray(self.states[a : a + n], dtype=np.float32))
            mask[j, :n] = 1
            labels[j, :n] = torch.tensor(rows[i].labels)
        return {"inputs_embeds": states, "attention_mask": mask, "labels": labels}


def training_rows(args: argparse.Namespace, base: Path) -> list[Encoded]:
    """Rows of each distinct training example (the mix repeats some sets), capped per domain."""
    corpus = args.corpus / "train.jsonl"
    key = content_key([corpus, base / "tokenizer.json"], max_length=args.max_length, cap=args.cap, whole=args.whole,
                      rows_per_example=args.rows_per_example, seed=args.seed)
    cache = args.out / "rows.pt"
    cached = load_rows(cache, key)
    if cached is not None:
        return cached
    by_domain: dict[str, list[Any]] = defaultdict(list)
    seen: set[str] = set()
    for example in read_jsonl(corpus):
        digest = hashlib.sha256(json.dumps([example.context, example.question, example.answer]).encode()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            by_domain[example.domain].append(example)
    rng = random.Random(args.seed)
    chosen = []
    for domain in sorted(by_domain):
        examples = by_domain[domain]
        if not any(domain.startswith(w) for w in args.whole):
            rng.shuffle(examples)
            examples = examples[: args.cap]
        chosen.extend(examples)
        print(f"train {domain}: {len(examples)} examples", flush=True)
    builder = row_builder(base, args.max_length, args.threads)
    rows: list[Encoded] = []
    for example in chosen:
        built = builder.rows(example)
        flagged = [r for r in built if 1 in r.labels]
        clean = [r for r in built if 1 not in r.labels]
        rng.shuffle(clean)
        rows.extend((flagged + clean)[: args.rows_per_example])
    save_rows(cache, key, rows)
    return rows


def dev_subset(answers: list[DevAnswer], cap: int, whole: list[str]) -> list[int]:
    """Indices of the dev answers kept: every one of a ``whole`` set, the first ``cap`` of the others."""
    taken: dict[str, int] = defaultdict(int)
    kept = []
    for i, answer in enumerate(answers):
        if any(answer.group.startswith(w) for w in whole) or taken[answer.group] < cap:
            taken[answer.group] += 1
            kept.append(i)
    return kept


def _top_peaks(split: Split, cache: StateCache, rows: list[Encoded], owner: list[int], n: int) -> np.ndarray:
    def probabilities(indices: list[int]) -> torch.Tensor:
        batch = cache.batch(rows, indices)
        labels = batch.pop("labels")
        return read_probabilities(split.model(**batch).logits, labels)

    split.top()
    split.model.eval()
    with torch.no_grad():
        return peaks_by_answer(owner, [len(r.input_ids) for r in rows], n, probabilities)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.partial", description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the encoder (an HF directory with tokenizer.json)")
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--trainable-layers", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--rows-per-example", type=int, default=3)
    parser.add_argument("--cap", type=int, default=150, help="training examples kept per domain (distinct ones)")
    parser.add_argument("--whole", nargs="*", default=["ragtruth"], help="domain prefixes kept whole (train and dev)")
    parser.add_argument("--dev-cap", type=int, default=150, help="dev answers kept per set outside --whole")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--warmup", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--reference", type=Path, default=None, help="a checkpoint to score on the same dev answers")
    parser.add_argument("--reference-dev-rows", type=Path, default=None,
                        help="its dev rows of this corpus, if built already (default: built into OUT)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)

    model = AutoModelForTokenClassification.from_pretrained(
        str(args.base), num_labels=2, id2label={0: "supported", 1: "hallucinated"},
        label2id={"supported": 0, "hallucinated": 1},
    )
    frozen = model.config.num_hidden_layers - args.trainable_layers
    split = Split(model, frozen)
    pad_id = TextEncoder(args.base / "tokenizer.json").pad_id
    rows = training_rows(args, args.base)
    all_dev = model_dev_answers(args.base, args.corpus, args.out / "dev_rows.pt", args.max_length, args.threads)
    keep = dev_subset(all_dev, args.dev_cap, args.whole)
    dev = [all_dev[i] for i in keep]
    texts = [f"dev answer {i}" for i in keep]  # both score files list the same answers, in order
    dev_rows, owner = flat_rows(dev)
    print(f"train rows {len(rows)}, dev answers {len(dev)} ({len(dev_rows)} rows), frozen layers {frozen}", flush=True)

    hidden = model.config.hidden_size
    key = {"base": args.base.name, "frozen": frozen, "rows_key": hashlib.sha256(repr(
        [r.input_ids for r in rows]).encode()).hexdigest()}
    train_cache = StateCache(args.out / "train_states.f16", [len(r.input_ids) for r in rows], hidden, key)
    train_cache.fill(split, rows, pad_id, "train")
    dev_key = key | {"rows_key": hashlib.sha256(repr([r.input_ids for r in dev_rows]).encode()).hexdigest()}
    dev_cache = StateCache(args.out / "dev_states.f16", [len(r.input_ids) for r in dev_rows], hidden, dev_key)
    dev_cache.fill(split, dev_rows, pad_id, "dev")

    optimizer = torch.optim.AdamW(split.trainable(), lr=args.lr, weight_decay=0.01)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i].input_ids))
    batches = [order[i : i + BATCH] for i in range(0, len(order), BATCH)]
    total = len(batches) * args.epochs
    warm = max(1, int(total * args.warmup))
    history, best, best_state, step, started = [], -1.0, None, 0, time.monotonic()
    for epoch in range(args.epochs):
        random.Random(f"{args.seed}:{epoch}").shuffle(batches)
        split.top()
        model.train()
        running = 0.0
        for batch in batches:
            lr = args.lr * min((step + 1) / warm, max(0.0, (total - step) / max(1, total - warm)))
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = model(**train_cache.batch(rows, batch)).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(split.trainable(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            running = 0.9 * running + 0.1 * loss.item() if running else loss.item()
            if step % 20 == 0:
                print(f"step {step}/{total} epoch {epoch} loss {running:.4f} {time.monotonic() - started:.0f}s",
                      flush=True)
        peaks = _top_peaks(split, dev_cache, dev_rows, owner, len(dev))
        scores = scores_by_group(dev, peaks)
        history.append({"epoch": epoch, "step": step} | {k: round(v, 4) for k, v in scores.items()})
        print(f"dev {format_scores(scores)} (epoch {epoch})", flush=True)
        if scores["mean"] > best:
            best = scores["mean"]
            best_state = {k: v.detach().clone() for k, v in split.whole().state_dict().items()}
            out_of_fold(dev, peaks, texts).save(args.out / "dev_scores.npz")

    assert best_state is not None
    final = split.whole()
    final.load_state_dict(best_state)
    _save(final, args.base, args.out)
    recipe = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()} | {
        "frozen_layers": frozen, "train_rows": len(rows), "dev_answers": len(dev), "steps": step,
        "seconds": round(time.monotonic() - started), "dev_by_epoch": history,
        "kept_epoch": max(history, key=lambda h: h["mean"])["epoch"],
    }
    (args.out / "training_args.json").write_text(json.dumps(recipe, indent=2))

    if args.reference:
        # The same dev answers in the reference's own tokenizer (built once unless given).
        ref_all = model_dev_answers(args.reference, args.corpus,
                                    args.reference_dev_rows or args.out / "reference_dev_rows.pt",
                                    args.max_length, args.threads)
        if not same_answers(ref_all, all_dev):
            raise SystemExit("--reference-dev-rows does not hold the same dev answers")
        ref_dev = [ref_all[i] for i in keep]
        ref_peaks = checkpoint_peaks(args.reference, ref_dev)
        ref_scores = scores_by_group(ref_dev, ref_peaks)
        print(f"reference {format_scores(ref_scores)}", flush=True)
        out_of_fold(ref_dev, ref_peaks, texts).save(args.out / "reference_dev_scores.npz")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
