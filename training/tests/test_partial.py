"""A bigger encoder's partial fine-tune on cached lower-layer states (``python -m training.partial``).

Real parts: tiny randomly initialised BERT and MPNet token classifiers built here from configs (the
two architectures the recipe uses), the real row builder, cache and training loop on the toy
corpus. No scripted parts, no network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training needs torch: pip install -e '.[train]'")
pytest.importorskip("transformers", reason="training needs transformers: pip install -e '.[train]'")

from training.compare import OutOfFold  # noqa: E402
from training.encode import Encoded  # noqa: E402
from training.partial import Split, StateCache, main  # noqa: E402
from training.tests.tiny_training import corpus, tiny_base  # noqa: E402


def _tiny(kind: str) -> Any:
    from transformers import BertConfig, BertForTokenClassification, MPNetConfig, MPNetForTokenClassification

    torch.manual_seed(3)
    if kind == "bert":
        return BertForTokenClassification(BertConfig(
            vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=2,
            num_labels=2)).eval()
    return MPNetForTokenClassification(MPNetConfig(
        vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=2,
        num_labels=2, pad_token_id=1)).eval()


def _rows(pad: int) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    lengths = [9, 5, 7]
    ids = torch.full((3, 9), pad)
    mask = torch.zeros(3, 9, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(5, 100, (n,))
        mask[i, :n] = 1
    return ids, mask, lengths


@pytest.mark.parametrize("kind", ["bert", "mpnet"])
@pytest.mark.parametrize("frozen", [1, 2])
def test_the_top_layers_over_cached_states_give_the_whole_models_probabilities(kind: str, frozen: int) -> None:
    model = _tiny(kind)
    split = Split(model, frozen)
    ids, mask, lengths = _rows(pad=1 if kind == "mpnet" else 0)
    with torch.no_grad():
        whole = split.whole()(input_ids=ids, attention_mask=mask).logits
        split.bottom()
        states = split.core(input_ids=ids, attention_mask=mask).last_hidden_state
        split.top()
        top = model(inputs_embeds=states, attention_mask=mask).logits
    for i, n in enumerate(lengths):
        assert torch.allclose(top[i, :n], whole[i, :n], atol=1e-5)
    # Only the top layers and the classifier learn; the frozen ones are what the cache holds.
    trainable = {id(p) for p in split.trainable()}
    assert all(id(p) not in trainable for p in split.embeddings.parameters())
    assert all(id(p) not in trainable for layer in split.layers[:frozen] for p in layer.parameters())
    assert all(id(p) in trainable for layer in split.layers[frozen:] for p in layer.parameters())


def test_a_filled_cache_is_reused_and_a_changed_key_starts_over(tmp_path: Path) -> None:
    model = _tiny("bert")
    split = Split(model, 2)
    ids, mask, lengths = _rows(pad=0)
    rows = [Encoded(ids[i, :n].tolist(), [0] * n, [0] * (n - 1) + [1], [(0, 1)] * n) for i, n in enumerate(lengths)]
    path = tmp_path / "states.f16"
    cache = StateCache(path, lengths, 32, {"run": 1})
    cache.fill(split, rows, 0, "test")
    again = StateCache(path, lengths, 32, {"run": 1})
    assert again.done == len(rows)
    batch = again.batch(rows, [1, 0])
    with torch.no_grad():
        split.bottom()
        expected = split.core(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.allclose(batch["inputs_embeds"][0, :5], expected[1, :5], atol=2e-3)  # float16 on disk
    assert batch["attention_mask"][0].tolist() == [1] * 5 + [0] * 4
    assert batch["labels"][0, :5].tolist() == rows[1].labels and set(batch["labels"][0, 5:].tolist()) == {-100}
    assert StateCache(path, lengths, 32, {"run": 2}).done == 0


def test_a_partial_run_saves_a_whole_checkpoint_and_both_models_dev_scores(tmp_path: Path) -> None:
    from transformers import AutoModelForTokenClassification

    base = tiny_base(tmp_path / "base")
    data = corpus(tmp_path / "corpus")
    corpus(data, "dev.jsonl", "ragtruth_qa")
    out = tmp_path / "out"
    args = ["--base", str(base), "--corpus", str(data), "--out", str(out), "--trainable-layers", "1",
            "--epochs", "2", "--threads", "1"]
    assert main(args) == 0
    recipe = json.loads((out / "training_args.json").read_text())
    assert recipe["frozen_layers"] == 1 and len(recipe["dev_by_epoch"]) == 2
    assert recipe["kept_epoch"] in (0, 1)
    saved = AutoModelForTokenClassification.from_pretrained(out)
    before = AutoModelForTokenClassification.from_pretrained(base)
    # The frozen layer and the embeddings are the base's; the trained layer is not.
    original = before.state_dict()
    same = {k: torch.equal(v, original[k]) for k, v in saved.state_dict().items() if k in original}
    assert all(v for k, v in same.items() if ".layer.0." in k or "embeddings" in k)
    assert not all(v for k, v in same.items() if ".layer.1." in k)
    scores = OutOfFold.load(out / "dev_scores.npz")
    assert len(scores.sets) == 12 and set(scores.sets.tolist()) == {"ragtruth_qa"}

    # A reference checkpoint is scored on the same dev answers, in the same format.
    assert main([*args, "--reference", str(base)]) == 0  # its dev rows built in its own tokenizer
    reference = OutOfFold.load(out / "reference_dev_scores.npz")
    assert np.array_equal(reference.answers, OutOfFold.load(out / "dev_scores.npz").answers)
    assert np.array_equal(reference.hallucinated, scores.hallucinated)
