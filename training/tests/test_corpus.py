"""The corpus generator and the training encoding: determinism, labels, split separation.

Nothing is scripted: real generator output, the real MiniLM tokenizer (skipped when the
offline pretrained package is not installed).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from training.corpus.builder import Example, LabelSpan, _train_or_heldout
from training.corpus.domains import HELDOUT_DOMAINS, TRAIN_DOMAINS
from training.corpus.splits import generate, read_jsonl, write_jsonl
from training.encode import IGNORE, TooLong, encode
from truthlens.detector.manifest import DEFAULT_MODEL_DIR


def _sample(split: str, n: int = 200, seed: int = 3) -> list[Example]:
    return list(generate(split, n, seed=seed, word_budget=200))  # type: ignore[arg-type]


def test_same_seed_same_corpus_other_seed_other_corpus(tmp_path: Path) -> None:
    first, again, other = _sample("train", 50), _sample("train", 50), _sample("train", 50, seed=4)
    assert first == again
    assert [e.answer for e in first] != [e.answer for e in other]
    assert write_jsonl(iter(first), tmp_path / "t.jsonl") == 50
    assert read_jsonl(tmp_path / "t.jsonl") == first


def test_labels_are_spans_of_the_answer_and_balance_holds() -> None:
    examples = _sample("train", 400)
    hallucinated = [e for e in examples if e.hallucinated]
    assert 0.35 < len(hallucinated) / len(examples) < 0.65
    kinds = {span.kind for e in hallucinated for span in e.labels}
    assert {"number", "date", "entity", "negation", "relation", "unsupported", "conflation"} <= kinds
    for e in examples:
        assert 1 <= len(e.context) <= 8 and e.question and e.answer
        for span in e.labels:
            assert 0 <= span.start < span.end <= len(e.answer)
            assert e.answer[span.start : span.end].strip()


def test_corrupted_values_are_absent_from_their_claims_evidence() -> None:
    # a swapped number/date/unit must not be what the passages say about the entity
    for e in _sample("train", 400):
        for span in e.labels:
            if span.kind in ("number", "date", "unit"):
                assert e.answer[span.start : span.end] not in " ".join(e.context)


def test_heldout_uses_unseen_domains_and_templates() -> None:
    train_domains = {e.domain for e in _sample("train", 300)}
    heldout_domains = {e.domain for e in _sample("heldout", 300)}
    assert train_domains == {d.name for d in TRAIN_DOMAINS}
    assert {d.name for d in HELDOUT_DOMAINS} <= heldout_domains
    for domain in TRAIN_DOMAINS:
        for attr in domain.attributes:
            for templates in (attr.facts, attr.questions, attr.answers):
                assert not set(_train_or_heldout(templates, "train")) & set(_train_or_heldout(templates, "heldout"))
    train_questions = {e.question for e in _sample("train", 300)}
    assert not train_questions & {e.question for e in _sample("heldout", 300) if e.domain in train_domains}


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    # The shipped model keeps all-MiniLM-L6-v2's tokenizer, so the pretrained package is not needed.
    return Tokenizer.from_file(str(DEFAULT_MODEL_DIR / "tokenizer.json"))


def test_encoding_labels_only_answer_tokens(tokenizer: Tokenizer) -> None:
    answer = "The tower is 450 metres tall."
    start = answer.index("450")
    ex = Example(
        "x",
        "t",
        "d",
        ("The tower is 330 metres tall.",),
        "How tall is it?",
        answer,
        (LabelSpan(start, start + 10, "number"),),
    )
    enc = encode(tokenizer, ex, 128)
    tokens = [tokenizer.id_to_token(i) for i in enc.input_ids]
    labelled = [(t, label) for t, label in zip(tokens, enc.labels, strict=True) if label != IGNORE]
    assert labelled == [("the", 0), ("tower", 0), ("is", 0), ("450", 1), ("metres", 1), ("tall", 0), (".", 0)]
    assert enc.labels[0] == IGNORE and enc.labels[-1] == IGNORE  # [CLS], final [SEP]
    assert set(enc.token_type_ids[-len(labelled) - 1 :]) == {1}
    with pytest.raises(TooLong):
        encode(tokenizer, ex, 16)


def test_generated_examples_fit_the_training_window(tokenizer: Tokenizer) -> None:
    too_long = 0
    for e in itertools.islice(generate("train", 200, seed=5, word_budget=200), 200):
        try:
            encode(tokenizer, e, 384)
        except TooLong:
            too_long += 1
    assert too_long <= 10
