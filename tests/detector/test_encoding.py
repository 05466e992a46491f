"""Pair rows assembled from token ids equal the tokenizer's own pair encoding.

Nothing is scripted: a real ``tokenizers`` tokenizer (MiniLM vocabulary).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from truthlens.detector.encoding import TextEncoder
from truthlens.detector.prompt import build_prompt
from truthlens.detector.types import InvalidInput


@pytest.fixture(scope="module")
def encoder(tokenizer_file: Path) -> TextEncoder:
    return TextEncoder(tokenizer_file)


def test_pair_row_matches_tokenizer_pair_encoding(encoder: TextEncoder, tokenizer_file: Path) -> None:
    prompt = build_prompt(["The Eiffel Tower is in Paris."], "Where is the tower?")
    answer = "It stands in Paris, café 😀 北京."
    reference = Tokenizer.from_file(str(tokenizer_file))
    reference.no_truncation()
    reference.no_padding()
    expected = reference.encode(prompt, answer)
    row = encoder.pair(encoder.encode(prompt).ids, encoder.encode(answer).ids)
    assert row.ids.tolist() == expected.ids
    assert row.type_ids.tolist() == expected.type_ids
    answer_positions = [i for i, s in enumerate(expected.sequence_ids) if s == 1]
    assert row.answer_start == answer_positions[0]
    assert row.answer_len == len(answer_positions)


def test_offsets_are_characters_of_the_answer(encoder: TextEncoder) -> None:
    answer = "Héllo 😀 wörld 北京 café"
    encoded = encoder.encode(answer)
    pieces = [answer[s:e] for s, e in encoded.offsets.tolist()]
    assert pieces[0] == "Héllo"
    assert "😀" in pieces and "北" in pieces and "京" in pieces
    assert pieces[-1] == "café"
    assert encoded.ids.dtype == np.int64


def test_truncation_settings_of_the_file_are_ignored(encoder: TextEncoder) -> None:
    # The MiniLM tokenizer.json truncates at 128 tokens for sentence embeddings.
    assert len(encoder.encode("word " * 1000)) == 1000


def test_lone_surrogate_is_invalid_input(encoder: TextEncoder) -> None:
    with pytest.raises(InvalidInput, match="not valid Unicode"):
        encoder.encode("bad \ud800 text")


def test_pair_layout_of_a_roberta_style_tokenizer(tmp_path: Path) -> None:
    """``<s> A </s></s> B </s>`` with one segment type, as RoBERTa/ModernBERT-style tokenizers use."""
    from tokenizers import models, pre_tokenizers, processors

    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "the": 4, "answer": 5, "prompt": 6, "a": 7, "b": 8}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    encoder = TextEncoder(path)
    assert encoder.num_special == 4 and encoder.pad_id == 1
    row = encoder.pair(encoder.encode("the prompt").ids, encoder.encode("the answer").ids)
    expected = tokenizer.encode("the prompt", "the answer")
    assert row.ids.tolist() == expected.ids == [0, 4, 6, 2, 2, 4, 5, 2]
    assert row.answer_start == 5 and row.answer_len == 2
