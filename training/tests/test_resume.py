"""Resumable training (:mod:`training.resume`, ``python -m training.train --resume``).

Real parts: a tiny randomly initialised BERT token classifier built here (the shipped model's
tokenizer), real AdamW steps, the real row builder and training loop of ``training.train`` on a
small corpus written here. No scripted parts, no network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training needs torch: pip install -e '.[train]'")
pytest.importorskip("transformers", reason="training needs transformers: pip install -e '.[train]'")

from training import resume  # noqa: E402
from training.tests.tiny_training import corpus as _corpus  # noqa: E402
from training.tests.tiny_training import tiny_base as _tiny_base  # noqa: E402
from training.tests.tiny_training import train as _train  # noqa: E402


def _stepped(base: Path, steps: int) -> tuple[Any, Any]:
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(base).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        ids = torch.randint(1000, 2000, (2, 12), generator=generator)
        loss = model(input_ids=ids, labels=torch.randint(0, 2, (2, 12), generator=generator)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model, optimizer


PROGRESS = resume.Progress(step=3, epoch=1, batch_in_epoch=7, total_steps=40, warmup_steps=2, lr=1e-3,
                           batch_size=2, seed=9, seconds=12.5)


def test_full_state_restores_weights_optimizer_and_position_exactly(tmp_path: Path) -> None:
    base = _tiny_base(tmp_path / "base")
    model, optimizer = _stepped(base, 3)
    resume.save_full(tmp_path / "state", model, optimizer, PROGRESS)

    fresh, fresh_optimizer = _stepped(base, 0)
    assert resume.load(tmp_path / "state", fresh, fresh_optimizer) == PROGRESS
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    saved, loaded = optimizer.state_dict(), fresh_optimizer.state_dict()
    assert saved["param_groups"] == loaded["param_groups"]
    for index, state in saved["state"].items():
        for key, value in state.items():
            assert torch.equal(value, loaded["state"][index][key]), (index, key)


def test_compact_state_keeps_moments_within_a_few_percent_and_is_much_smaller(tmp_path: Path) -> None:
    base = _tiny_base(tmp_path / "base")
    model, optimizer = _stepped(base, 3)
    resume.save_full(tmp_path / "full", model, optimizer, PROGRESS)
    size = resume.save_compact(tmp_path / "compact", model, optimizer, PROGRESS)
    assert size < 0.45 * (tmp_path / "full" / resume.FULL).stat().st_size

    fresh, fresh_optimizer = _stepped(base, 0)
    assert resume.load(tmp_path / "compact", fresh, fresh_optimizer) == PROGRESS
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.allclose(a.float(), b, rtol=1e-3, atol=1e-4), name
    for param, fresh_param in zip(model.parameters(), fresh.parameters(), strict=True):
        want, got = optimizer.state[param], fresh_optimizer.state[fresh_param]
        assert float(got["step"]) == float(want["step"]) == 3.0
        m, m_back = want["exp_avg"].numpy(), got["exp_avg"].numpy()
        v, v_back = want["exp_avg_sq"].numpy(), got["exp_avg_sq"].numpy()
        kept = m_back != 0
        assert np.all(np.abs(m_back[kept] / m[kept] - 1) <= 0.07)
        assert np.all(np.sign(m_back[kept]) == np.sign(m[kept]))
        assert np.all(np.abs(m[~kept]) <= np.abs(m).max() * 2.0 ** -resume.M_OCTAVES * 1.1)
        # a second moment is never rounded to 0 (its update would blow up), only raised
        assert np.all(v_back[v > 0] > 0)
        high = v > v.max() * 2.0 ** -resume.V_OCTAVES
        assert np.all(np.abs(v_back[high] / v[high] - 1) <= 0.06)


def test_a_run_stopped_and_resumed_ends_where_an_uninterrupted_run_ends(tmp_path: Path) -> None:
    from transformers import AutoModelForTokenClassification

    base = _tiny_base(tmp_path / "base")
    corpus = _corpus(tmp_path / "corpus")
    common = ["--corpus", str(corpus), "--base", str(base), "--batch-size", "2", "--epochs", "1.5",
              "--lr", "1e-3", "--threads", "1", "--seed", "4", "--max-length", "128"]
    _train([*common, "--out", str(tmp_path / "straight")])
    _train([*common, "--out", str(tmp_path / "stopped"), "--stop-after-steps", "4"])  # mid-epoch 0
    progress = json.loads((tmp_path / "stopped" / "state" / resume.PROGRESS).read_text())
    assert (progress["step"], progress["epoch"], progress["batch_in_epoch"]) == (4, 0, 4)
    assert not (tmp_path / "stopped" / "config.json").exists()  # unfinished: only OUT/latest
    _train([*common, "--out", str(tmp_path / "stopped"), "--resume", str(tmp_path / "stopped" / "state")])

    straight = AutoModelForTokenClassification.from_pretrained(tmp_path / "straight").state_dict()
    resumed = AutoModelForTokenClassification.from_pretrained(tmp_path / "stopped").state_dict()
    assert json.loads((tmp_path / "stopped" / "training_args.json").read_text())["steps"] == 9
    for name, tensor in straight.items():
        assert torch.equal(tensor, resumed[name]), name


def test_resuming_with_another_schedule_is_refused(tmp_path: Path) -> None:
    base = _tiny_base(tmp_path / "base")
    corpus = _corpus(tmp_path / "corpus")
    common = ["--corpus", str(corpus), "--base", str(base), "--batch-size", "2", "--threads", "1",
              "--max-length", "128", "--out", str(tmp_path / "run")]
    _train([*common, "--epochs", "1", "--stop-after-steps", "1"])
    with pytest.raises(SystemExit):
        _train([*common, "--epochs", "2", "--resume", str(tmp_path / "run" / "state")])


def test_bf16_autocast_trains_fp32_weights_near_the_fp32_run(tmp_path: Path) -> None:
    """``--bf16`` changes only the forward pass's precision: the saved weights are fp32, they moved
    from the base, and they stay near the fp32 run's (same seed, rows and schedule)."""
    from transformers import AutoModelForTokenClassification

    base = _tiny_base(tmp_path / "base")
    corpus = _corpus(tmp_path / "corpus")
    common = ["--corpus", str(corpus), "--base", str(base), "--batch-size", "2", "--epochs", "1",
              "--lr", "1e-3", "--threads", "1", "--seed", "4", "--max-length", "128"]
    _train([*common, "--out", str(tmp_path / "fp32")])
    _train([*common, "--out", str(tmp_path / "bf16"), "--bf16"])

    start = AutoModelForTokenClassification.from_pretrained(base).state_dict()
    fp32 = AutoModelForTokenClassification.from_pretrained(tmp_path / "fp32").state_dict()
    bf16 = AutoModelForTokenClassification.from_pretrained(tmp_path / "bf16").state_dict()
    assert json.loads((tmp_path / "bf16" / "training_args.json").read_text())["bf16"] is True
    name = "classifier.weight"
    assert bf16[name].dtype == torch.float32
    moved = (bf16[name] - start[name]).norm()
    assert moved > 0
    assert (bf16[name] - fp32[name]).norm() < 0.5 * moved
