"""Pads encoded rows into one batch of tensors, as training and the dev-part scoring both feed the model."""

from __future__ import annotations

import torch

from training.encode import IGNORE, Encoded


def collate(batch: list[Encoded], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """``input_ids`` padded with ``pad_id``, ``labels`` with -100 (never read), on ``device``."""
    width = max(len(e.input_ids) for e in batch)

    def pad(rows: list[list[int]], value: int) -> torch.Tensor:
        return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=torch.long).to(device)

    return {
        "input_ids": pad([e.input_ids for e in batch], pad_id),
        "token_type_ids": pad([e.token_type_ids for e in batch], 0),
        "attention_mask": pad([[1] * len(e.input_ids) for e in batch], 0),
        "labels": pad([e.labels for e in batch], IGNORE),
    }
