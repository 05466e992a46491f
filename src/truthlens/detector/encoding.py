"""Tokenisation for the detector: a fast ``tokenizers`` tokenizer, char offsets, pair rows.

Segments are encoded once each (the tokenizer encodes the two sides of a pair
independently anyway) and pair rows are assembled from token ids, so the answer is never
re-tokenised per chunk and its offsets always point into the original answer string.
Encodings are kept in a bounded LRU keyed by the text
(:mod:`truthlens.detector.scoring.memo`): a second answer on the same passages does not
tokenise them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Encoding, Tokenizer

from truthlens.detector.scoring.memo import Memo
from truthlens.detector.types import InvalidInput

# The encodings kept: a few hundred long contexts' worth (24 bytes a token: ids and offsets).
CACHE_TEXTS = 4096
CACHE_TOKENS = 1 << 19


@dataclass(frozen=True, slots=True)
class EncodedText:
    """Token ids of one text (no special tokens) and each token's ``[start, end)`` char offsets."""

    ids: np.ndarray  # int64 [n]
    offsets: np.ndarray  # int64 [n, 2], characters of the encoded text

    def __len__(self) -> int:
        return int(self.ids.shape[0])


@dataclass(frozen=True, slots=True)
class ModelRow:
    """One model input row: ``[special] prompt [special] answer-slice [special]``."""

    ids: np.ndarray  # int64 [length]
    type_ids: np.ndarray  # int64 [length]
    answer_start: int  # row position of the first answer token
    answer_len: int

    @property
    def length(self) -> int:
        return int(self.ids.shape[0])


@dataclass(frozen=True, slots=True)
class _PairTemplate:
    """Where the tokenizer's post-processor puts special tokens around a pair."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    prefix_types: tuple[int, ...]
    middle_types: tuple[int, ...]
    suffix_types: tuple[int, ...]
    first_type: int
    second_type: int


class TextEncoder:
    """Loads ``tokenizer.json`` and turns texts into ids/offsets and pair rows."""

    def __init__(self, tokenizer_path: Path) -> None:
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        padding = tokenizer.padding
        # Shipped tokenizer.json files often carry truncation/padding for sentence
        # embedding (e.g. 128 tokens); the chunk planner owns lengths here.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._template = _read_template(tokenizer)
        self.pad_id = int(padding["pad_id"]) if padding else _pad_id(tokenizer)
        self._cache: Memo[str, EncodedText] = Memo(max_entries=CACHE_TEXTS, max_size=CACHE_TOKENS, size=len)

    @property
    def num_special(self) -> int:
        """Special tokens a pair row adds around the two segments."""
        t = self._template
        return len(t.prefix) + len(t.middle) + len(t.suffix)

    def encode(self, text: str) -> EncodedText:
        return self._cache.get(text, lambda: _to_encoded(self._encode_batch([text])[0]))

    def encode_many(self, texts: Sequence[str]) -> list[EncodedText]:
        # The texts not cached go to the tokenizer as one batch (it encodes them in parallel).
        missing = [t for t in dict.fromkeys(texts) if not self._cache.peek(t)]
        fresh = dict(zip(missing, map(_to_encoded, self._encode_batch(missing)), strict=True)) if missing else {}
        for text, encoded in fresh.items():
            self._cache.put(text, encoded)
        return [fresh[t] if t in fresh else self.encode(t) for t in texts]

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def pair(self, prompt_ids: np.ndarray, answer_ids: np.ndarray) -> ModelRow:
        """The row for ``prompt`` (first segment) and ``answer`` (second segment)."""
        t = self._template
        parts = (t.prefix, prompt_ids, t.middle, answer_ids, t.suffix)
        ids = np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])
        types = np.concatenate(
            [
                np.asarray(t.prefix_types, dtype=np.int64),
                np.full(len(prompt_ids), t.first_type, dtype=np.int64),
                np.asarray(t.middle_types, dtype=np.int64),
                np.full(len(answer_ids), t.second_type, dtype=np.int64),
                np.asarray(t.suffix_types, dtype=np.int64),
            ]
        )
        start = len(t.prefix) + len(prompt_ids) + len(t.middle)
        return ModelRow(ids=ids, type_ids=types, answer_start=start, answer_len=len(answer_ids))

    def _encode_batch(self, texts: list[str]) -> list[Encoding]:
        try:
            return self._tokenizer.encode_batch(texts, add_special_tokens=False)
        except (UnicodeEncodeError, TypeError) as exc:
            # A Python str with lone surrogates cannot cross into Rust as UTF-8; tokenizers
            # reports it as a TypeError (callers have already checked the types are str).
            raise InvalidInput(f"text cannot be tokenised, it is not valid Unicode (lone surrogate?): {exc}") from exc


def _to_encoded(encoding: Encoding) -> EncodedText:
    ids = np.asarray(encoding.ids, dtype=np.int64)
    offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
    # Shared by every check that sees the text (the cache): nobody may write into them.
    ids.flags.writeable = False
    offsets.flags.writeable = False
    return EncodedText(ids=ids, offsets=offsets)


def _read_template(tokenizer: Tokenizer) -> _PairTemplate:
    a = tokenizer.encode("a", add_special_tokens=False)
    b = tokenizer.encode("b", add_special_tokens=False)
    pair = tokenizer.post_process(a, b, add_special_tokens=True)
    # sequence_ids of post-processed standalone encodings are unreliable; the special
    # tokens mask plus the known segment lengths place the two segments.
    ordinary = [i for i, special in enumerate(pair.special_tokens_mask) if not special]
    if len(ordinary) != len(a.ids) + len(b.ids) or not a.ids or not b.ids:
        raise ValueError("tokenizer post-processor does not produce a (first, second) pair layout")
    first, second = ordinary[: len(a.ids)], ordinary[len(a.ids) :]
    if first != list(range(first[0], first[-1] + 1)) or second != list(range(second[0], second[-1] + 1)):
        raise ValueError("tokenizer post-processor interleaves special tokens inside a segment")
    prefix = range(first[0])
    middle = range(first[-1] + 1, second[0])
    suffix = range(second[-1] + 1, len(pair.ids))
    ids, types = pair.ids, pair.type_ids
    return _PairTemplate(
        prefix=tuple(ids[i] for i in prefix),
        middle=tuple(ids[i] for i in middle),
        suffix=tuple(ids[i] for i in suffix),
        prefix_types=tuple(types[i] for i in prefix),
        middle_types=tuple(types[i] for i in middle),
        suffix_types=tuple(types[i] for i in suffix),
        first_type=types[first[0]],
        second_type=types[second[0]],
    )


def _pad_id(tokenizer: Tokenizer) -> int:
    for token in ("[PAD]", "<pad>"):
        found = tokenizer.token_to_id(token)
        if found is not None:
            return int(found)
    # Padded positions are masked out, so any valid id works.
    return 0
