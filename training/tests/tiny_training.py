"""A tiny training setup for the training tests: a random BERT, a toy corpus, the real train command.

The BERT is built here from a config (no download) with the shipped model's tokenizer; the corpus
is twelve one-sentence answers over one-sentence contexts, every other one with a wrong number.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from training.corpus.builder import Example, LabelSpan
from training.corpus.splits import write_jsonl
from truthlens.detector.manifest import DEFAULT_MODEL_DIR


def tiny_base(path: Path) -> Path:
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(5)
    config = BertConfig(
        vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=512, num_labels=2,
    )
    BertForTokenClassification(config).save_pretrained(path)
    shutil.copyfile(DEFAULT_MODEL_DIR / "tokenizer.json", path / "tokenizer.json")
    return path


def corpus(path: Path, name: str = "train.jsonl", domain: str = "toy", wrong_every: int = 2) -> Path:
    """Twelve examples in ``path/name``: those whose index is no multiple of ``wrong_every`` state a
    wrong, labelled length (``wrong_every=1``: every answer is faithful)."""
    examples = []
    for i in range(12):
        answer = f"The bridge opened in {1900 + i} and is {100 + i} metres long."
        wrong = answer.index(str(100 + i))
        context = (f"The bridge opened in {1900 + i}. It is {90 + i} metres long.",)
        examples.append(Example(
            f"{domain}{i}", "dev" if name.startswith("dev") else "train", domain, context,
            "When did the bridge open?", answer, (LabelSpan(wrong, wrong + 3, "number"),) if i % wrong_every else (),
        ))
    write_jsonl(iter(examples), path / name)
    return path


def train(args: list[str]) -> None:
    """``python -m training.train ARGS``, in process."""
    from training.train import main

    assert main(args) == 0
