"""Pair-encodes examples exactly as the detector serves them and maps character labels to tokens.

Encoding is LettuceDetect's: ``(prompt, answer)`` with truncation of the prompt only; labels
on answer tokens (1 hallucinated, 0 supported) and -100 on prompt and special tokens. An
example whose prompt would be truncated is rejected rather than silently mislabelled: a
supported answer whose evidence fell out of the window would teach the model to flag facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenizers import Tokenizer

from training.corpus.builder import Example
from truthlens.detector.prompt import build_prompt, read_task

IGNORE = -100


@dataclass(frozen=True, slots=True)
class Encoded:
    input_ids: list[int]
    token_type_ids: list[int]
    labels: list[int]
    answer_offsets: list[tuple[int, int]]  # char offsets in the answer of each labelled token


class TooLong(ValueError):
    """The whole prompt plus answer does not fit ``max_length``."""


def encode(tokenizer: Tokenizer, example: Example, max_length: int) -> Encoded:
    prompt = build_prompt(example.context, read_task(example.context, example.question).question)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    enc = tokenizer.encode(prompt, example.answer)
    if len(enc.ids) > max_length:
        raise TooLong(f"{example.id}: {len(enc.ids)} tokens > {max_length}")
    labels: list[int] = []
    offsets: list[tuple[int, int]] = []
    for seq_id, special, (start, end) in zip(enc.sequence_ids, enc.special_tokens_mask, enc.offsets, strict=True):
        if seq_id != 1 or special:
            labels.append(IGNORE)
            continue
        hallucinated = any(start < span.end and span.start < end for span in example.labels)
        labels.append(1 if hallucinated else 0)
        offsets.append((start, end))
    return Encoded(list(enc.ids), list(enc.type_ids), labels, offsets)
