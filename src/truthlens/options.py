"""Readers for a mode's own options: each error names the offending key path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from truthlens.modes.base import ConfigError, OptionContext


def check_keys(raw: Any, known: frozenset[str] | set[str], ctx: OptionContext) -> None:
    """``raw`` must be a mapping whose keys are all in ``known``."""
    if not isinstance(raw, Mapping):
        raise ConfigError(ctx.path, "must be a mapping")
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(f"{ctx.path}.{unknown[0]}", f"unknown option (known: {', '.join(sorted(known))})")


def read_number(raw: Mapping[str, Any], key: str, ctx: OptionContext, *, lo: float, hi: float,
                default: float | None, integer: bool = False) -> Any:
    """``raw[key]`` (or ``default``) as a number in [lo, hi]; booleans are not numbers."""
    value: Any = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise ConfigError(f"{ctx.path}.{key}", f"must be {'an integer' if integer else 'a number'}, got {value!r}")
    number = float(value)
    if not lo <= number <= hi:
        raise ConfigError(f"{ctx.path}.{key}", f"must be between {lo:g} and {hi:g}, got {value!r}")
    return int(value) if integer else number


def read_model(raw: Mapping[str, Any], key: str, ctx: OptionContext) -> str | None:
    value = raw.get(key)
    return None if value is None else check_model(value, f"{ctx.path}.{key}", ctx)


def check_model(value: Any, key_path: str, ctx: OptionContext) -> str:
    """A model name the ``models:`` section can reach (its ``default`` entry reaches any name)."""
    if not isinstance(value, str) or not value:
        raise ConfigError(key_path, f"must be a model name, got {value!r}")
    if value not in ctx.models and "default" not in ctx.models:
        raise ConfigError(key_path, f"model {value!r} is not in the models section")
    return value
