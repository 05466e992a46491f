"""Inputs no backend checks: wrong types, or over the configured size limits.

Every backend (the encoder engine, the generative ``llm`` backend) refuses them the same way,
before any work starts: :class:`~truthlens.detector.types.InvalidInput`, which callers turn
into ``unavailable`` with reason ``invalid_input``.
"""

from __future__ import annotations

from collections.abc import Sequence

from truthlens.detector.types import DetectionInput, DetectorSettings, InvalidInput


def validate(item: DetectionInput, settings: DetectorSettings) -> None:
    """Raise :class:`InvalidInput` for wrong types or sizes, before any tokenisation."""
    if not isinstance(item, DetectionInput):
        raise InvalidInput(f"expected a DetectionInput, got {type(item).__name__}")
    if not isinstance(item.answer, str):
        raise InvalidInput(f"answer must be a string, got {type(item.answer).__name__}")
    if not isinstance(item.question, str):
        raise InvalidInput(f"question must be a string, got {type(item.question).__name__}")
    # A bare string is a Sequence[str] too; treating it as one passage per character would be wrong.
    if isinstance(item.context, (str, bytes)) or not isinstance(item.context, Sequence):
        raise InvalidInput(f"context must be a list of strings, got {type(item.context).__name__}")
    for i, passage in enumerate(item.context):
        if not isinstance(passage, str):
            raise InvalidInput(f"context[{i}] must be a string, got {type(passage).__name__}")
    if len(item.answer) > settings.max_answer_chars:
        raise InvalidInput(
            f"answer has {len(item.answer)} characters, over max_answer_chars={settings.max_answer_chars}"
        )
    context_chars = sum(len(p) for p in item.context) + len(item.question)
    if context_chars > settings.max_context_chars:
        raise InvalidInput(
            f"context and question have {context_chars} characters, over max_context_chars={settings.max_context_chars}"
        )


def validate_threshold(threshold: object) -> None:
    """Raise :class:`InvalidInput` unless ``threshold`` is a number in [0, 1]."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        raise InvalidInput(f"threshold must be a number in [0, 1], got {threshold!r}")
