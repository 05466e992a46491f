"""Resumable training state: exact for the machine that trains, compact for the repository.

A CPU run of the LLM-answer mix takes several sittings, so the state that continues it has to
outlive the process and, between machines, travel in a clone. Two forms:

- **full** (``full.pt``): fp32 weights, AdamW's state dict and the position in the data; what
  ``--resume`` reloads bit for bit on the machine that wrote it (saved every ``--save-every-min``).
- **compact** (``compact.npz`` + ``progress.json``, ~90 MB for MiniLM-L6): fp16 weights and
  AdamW's two moments in 8 bits each, on a per-block logarithmic scale (blocks of 256 values):
  ``exp_avg`` as sign + 7-bit log magnitude, ``exp_avg_sq`` as 8-bit log. A log scale keeps each
  value within a few percent *relative* to itself, which is what Adam's update ``m / sqrt(v)``
  needs: a linear 8-bit scale would round the second moment of rarely-seen embedding rows to 0
  and blow their next update up. Second moments far below their block's largest are raised to
  the block's floor (their update only gets smaller); first moments there become 0.

Both carry :class:`Progress` (step, epoch, batch within the epoch, the schedule) and torch's random
state (dropout), so a resumed run takes the same batches in the same order, with the same learning
rate and dropout masks, as one that never stopped: from the full state it ends bit for bit where
an uninterrupted run ends.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

FULL = "full.pt"
COMPACT = "compact.npz"
PROGRESS = "progress.json"
BLOCK = 256
# log2 range kept below each block's largest value: first moments under it are 0, second moments
# are raised to it. 24 and 40 octaves: about 7% and 6% relative steps at 127 and 255 levels.
M_OCTAVES = 24.0
V_OCTAVES = 40.0


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a run is: its schedule and the next batch to take."""

    step: int
    epoch: int
    batch_in_epoch: int
    total_steps: int
    warmup_steps: int
    lr: float
    batch_size: int
    seed: int
    seconds: float


def _blocks(x: np.ndarray) -> tuple[np.ndarray, int]:
    flat = x.astype(np.float32).ravel()
    pad = (-len(flat)) % BLOCK
    return np.pad(flat, (0, pad)).reshape(-1, BLOCK), len(flat)


def log_quantise(x: np.ndarray, *, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """8-bit codes and per-block log2 maxima of ``x`` (see the module docstring)."""
    blocks, _ = _blocks(x)
    mag = np.abs(blocks)
    top = mag.max(axis=1)
    hi = np.where(top > 0, np.log2(np.maximum(top, np.finfo(np.float32).tiny)), 0.0).astype(np.float32)
    levels = 127 if signed else 255
    octaves = M_OCTAVES if signed else V_OCTAVES
    with np.errstate(divide="ignore"):
        logs = np.log2(mag)
    position = (logs - (hi[:, None] - octaves)) / octaves * (levels - 1)
    level = np.clip(np.rint(position), 0, levels - 1) + 1
    if signed:  # below the floor a first moment is 0
        codes = (np.where((mag > 0) & (position >= -0.5), level, 0) * np.sign(blocks)).astype(np.int8)
    else:  # below the floor a second moment is raised to it
        codes = np.where(mag > 0, level, 0).astype(np.uint8)
    codes[top == 0] = 0
    return codes, hi


def log_dequantise(codes: np.ndarray, hi: np.ndarray, shape: tuple[int, ...], *, signed: bool) -> np.ndarray:
    levels = 127 if signed else 255
    octaves = M_OCTAVES if signed else V_OCTAVES
    level = np.abs(codes.astype(np.int32))
    value = np.exp2((hi[:, None] - octaves) + (level - 1) / (levels - 1) * octaves)
    value = np.where(level > 0, value, 0.0) * (np.sign(codes) if signed else 1)
    size = int(np.prod(shape)) if shape else 1
    return value.astype(np.float32).ravel()[:size].reshape(shape)


def _names(model: torch.nn.Module) -> list[str]:
    return [name for name, _ in model.named_parameters()]


def save_full(directory: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, progress: Progress) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (FULL + ".tmp")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "progress": asdict(progress),
                "torch_rng": torch.get_rng_state()}, tmp)
    tmp.replace(directory / FULL)  # a run killed mid-save keeps the previous state
    (directory / PROGRESS).write_text(json.dumps(asdict(progress), indent=2) + "\n")


def save_compact(directory: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, progress: Progress) -> int:
    """Write the committable state; returns its size in bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    for name, tensor in model.state_dict().items():
        arrays[f"w/{name}"] = tensor.detach().cpu().numpy().astype(np.float16)
    by_param = dict(zip(_names(model), model.parameters(), strict=True))
    for name, param in by_param.items():
        state = optimizer.state.get(param)
        if not state:
            continue
        arrays[f"m/{name}"], arrays[f"mh/{name}"] = log_quantise(state["exp_avg"].cpu().numpy(), signed=True)
        arrays[f"v/{name}"], arrays[f"vh/{name}"] = log_quantise(state["exp_avg_sq"].cpu().numpy(), signed=False)
        arrays[f"s/{name}"] = np.asarray(float(state["step"]), dtype=np.float32)
    arrays["torch_rng"] = torch.get_rng_state().numpy()  # dropout masks continue as if never stopped
    tmp = directory / "compact.tmp.npz"
    np.savez_compressed(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(directory / COMPACT)
    (directory / PROGRESS).write_text(json.dumps(asdict(progress), indent=2) + "\n")
    return (directory / COMPACT).stat().st_size


def load(directory: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> Progress:
    """Restore ``model`` and ``optimizer`` from ``directory`` (full state when present, else compact)."""
    if (directory / FULL).exists():
        saved = torch.load(directory / FULL, map_location="cpu", weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        if "torch_rng" in saved:  # states written before it was kept resume with fresh dropout masks
            torch.set_rng_state(saved["torch_rng"])
        return Progress(**saved["progress"])
    if not (directory / COMPACT).exists():
        raise FileNotFoundError(f"{directory}: no {FULL} or {COMPACT} to resume from")
    with np.load(directory / COMPACT) as data:
        weights = {
            k.removeprefix("w/"): torch.from_numpy(data[k].astype(np.float32)) for k in data.files if k.startswith("w/")
        }
        model.load_state_dict(weights)
        if "torch_rng" in data.files:
            torch.set_rng_state(torch.from_numpy(data["torch_rng"].copy()))
        for name, param in zip(_names(model), model.parameters(), strict=True):
            if f"m/{name}" not in data.files:
                continue
            shape = tuple(param.shape)
            optimizer.state[param] = {
                "step": torch.tensor(float(data[f"s/{name}"])),
                "exp_avg": torch.from_numpy(log_dequantise(data[f"m/{name}"], data[f"mh/{name}"], shape, signed=True)),
                "exp_avg_sq": torch.from_numpy(
                    log_dequantise(data[f"v/{name}"], data[f"vh/{name}"], shape, signed=False)
                ),
            }
    return Progress(**json.loads((directory / PROGRESS).read_text()))


def main(argv: list[str] | None = None) -> int:
    """Write the compact form of a run's full state (what a fresh clone resumes from)."""
    import argparse

    from transformers import AutoModelForTokenClassification

    parser = argparse.ArgumentParser(prog="python -m training.resume", description=main.__doc__)
    parser.add_argument("--state", type=Path, required=True, help="a run's state directory (OUT/state)")
    parser.add_argument("--base", type=Path, required=True, help="the run's --base (architecture and tokenizer)")
    parser.add_argument("--out", type=Path, required=True, help="where the compact state goes")
    args = parser.parse_args(argv)
    model = AutoModelForTokenClassification.from_pretrained(str(args.base), num_labels=2)
    saved = torch.load(args.state / FULL, map_location="cpu", weights_only=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(saved["progress"]["lr"]), weight_decay=0.01)
    progress = load(args.state, model, optimizer)
    size = save_compact(args.out, model, optimizer, progress)
    print(f"compact state of step {progress.step}/{progress.total_steps} in {args.out}: {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
