"""The one typed reader of configuration values: the gateway's config and every mode's options.

:class:`Section` wraps one mapping of the YAML document together with its dotted key path,
and reads each value as the type it must have. Every problem is a :class:`ConfigError` whose
``key`` is the full path of the offending key (``decisions[0].plugins[0].configuration.samples``),
so an operator can find it in the file; a wrong value is never replaced by a default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlparse

T = TypeVar("T", bound=str)
K = TypeVar("K", bound=str)


class ConfigError(ValueError):
    """Invalid configuration; the message starts with the offending key path."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True, slots=True)
class OptionContext:
    """Handed to a mode's ``parse_options`` so errors can name the key and models can be checked."""

    path: str  # e.g. "decisions[2].plugins[0].configuration"
    models: frozenset[str]  # model names the config's ``models`` section can reach


class Section:
    """A mapping plus its key path, with typed readers whose errors name the key.

    A reader's ``default`` stands only for an absent key: a present value of the wrong type
    is an error, never the default. Booleans are never numbers: ``bool`` subclasses ``int`` in
    Python, but ``samples: true`` in YAML is a mistake, not 1. Nor are YAML's ``.nan`` and
    ``.inf``: every comparison with NaN is false, so a range check would let it through and
    the value would then fail every check it meets (a NaN threshold flags nothing).
    """

    __slots__ = ("raw", "path")

    def __init__(self, raw: object, path: str) -> None:
        if raw is None:  # `section:` with nothing under it reads as YAML null
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(path or "(root)", f"must be a mapping, got {type(raw).__name__}")
        self.raw: Mapping[str, Any] = raw
        self.path = path

    # ------------------------------------------------------------------ structure

    def key(self, name: str) -> str:
        """The full dotted path of key ``name`` in this section."""
        return f"{self.path}.{name}" if self.path else name

    def allow(self, *names: str, hint: str | None = None) -> None:
        """Every key must be one of ``names``: a typo is an error, not an ignored key.
        ``hint`` replaces the list of expected keys in the message."""
        for k in self.raw:
            if k not in names:
                raise ConfigError(self.key(str(k)), f"unknown key ({hint or 'expected one of ' + ', '.join(names)})")

    def require(self, *names: str) -> None:
        """Each of ``names`` must be present."""
        for name in names:
            if name not in self.raw:
                raise ConfigError(self.key(name), "is required")

    def one_of(self, names: tuple[K, ...]) -> tuple[K, Any]:
        """The one key of ``names`` present here (typed as declared) and its raw value."""
        present = [n for n in names if n in self.raw]
        if len(present) != 1:
            got = ", ".join(present) or "none"
            raise ConfigError(self.path, f"needs exactly one of {', '.join(names)} (got {got})")
        return present[0], self.raw[present[0]]

    def __contains__(self, name: str) -> bool:
        return name in self.raw

    def get(self, name: str, default: Any = None) -> Any:
        """The raw value, unchecked: for values only the caller knows how to validate."""
        return self.raw.get(name, default)

    def section(self, name: str) -> Section:
        """The nested mapping under ``name`` (absent or null: empty)."""
        return Section(self.raw.get(name), self.key(name))

    # ------------------------------------------------------------------ scalars

    def boolean(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise ConfigError(self.key(name), f"must be true or false, got {value!r}")
        return value

    def number(self, name: str, default: float, *, lo: float | None = None, hi: float | None = None,
               positive: bool = False) -> float:
        value = self.raw.get(name, default)
        return self._number(name, value, lo, hi, positive)

    def optional_number(self, name: str, default: float | None = None, *, lo: float | None = None,
                        hi: float | None = None) -> float | None:
        """A number, or None when the value is null (or absent with no default): "not set"."""
        value = self.raw.get(name, default)
        return None if value is None else self._number(name, value, lo, hi, False)

    def integer(self, name: str, default: int, *, lo: int | None = None, hi: int | None = None) -> int:
        value = self.raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(self.key(name), f"must be an integer, got {value!r}")
        _check_range(self.key(name), value, lo, hi, positive=False)
        return value

    def optional_integer(self, name: str, *, lo: int | None = None, hi: int | None = None) -> int | None:
        """An integer, or None when the key is absent or null."""
        return None if self.raw.get(name) is None else self.integer(name, 0, lo=lo, hi=hi)

    def string(self, name: str, default: str | None = None, *, allow_empty: bool = False) -> str:
        """A non-empty string (``allow_empty``: any string); with no default the key is required."""
        value = self.raw.get(name, default)
        if allow_empty and isinstance(value, str):
            return value
        return _nonempty_string(value, self.key(name))

    def string_list(self, name: str) -> list[str]:
        """A required, non-empty list of non-empty strings."""
        value = self.raw.get(name)
        if not isinstance(value, list) or not value:
            raise ConfigError(self.key(name), "must be a non-empty list of strings")
        return [_nonempty_string(v, f"{self.key(name)}[{i}]") for i, v in enumerate(value)]

    def optional_string(self, name: str, default: str | None = None) -> str | None:
        """A non-empty string, or None when the value is null (or absent with no default)."""
        return None if self.raw.get(name, default) is None else self.string(name, default)

    def choice(self, name: str, default: T, options: tuple[T, ...]) -> T:
        value = self.raw.get(name, default)
        for option in options:  # hand back the declared option: its Literal type survives
            if value == option:
                return option
        raise ConfigError(self.key(name), f"must be one of {', '.join(options)}, got {value!r}")

    def http_url(self, name: str) -> str:
        """A required ``http://`` or ``https://`` URL with a host."""
        url = self.string(name)
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ConfigError(self.key(name), f"must be an http:// or https:// URL, got {url!r}")
        return url

    def optional_http_url(self, name: str) -> str | None:
        return None if self.raw.get(name) is None else self.http_url(name)

    # ------------------------------------------------------------------ model names

    def model(self, name: str, ctx: OptionContext) -> str | None:
        """A model name the ``models:`` section can reach, or None when absent or null."""
        value = self.raw.get(name)
        return None if value is None else _reachable_model(value, self.key(name), ctx)

    def model_list(self, name: str, ctx: OptionContext) -> tuple[str, ...]:
        """A required, non-empty list of distinct reachable model names."""
        value = self.raw.get(name)
        if isinstance(value, str) or not isinstance(value, Sequence) or not value:
            raise ConfigError(self.key(name), "must be a non-empty list of model names")
        names = tuple(_reachable_model(m, f"{self.key(name)}[{i}]", ctx) for i, m in enumerate(value))
        if len(set(names)) != len(names):
            raise ConfigError(self.key(name), "lists a model twice")
        return names

    # ------------------------------------------------------------------ helpers

    def _number(self, name: str, value: object, lo: float | None, hi: float | None, positive: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(self.key(name), f"must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ConfigError(self.key(name), f"must be a finite number, got {value!r}")
        _check_range(self.key(name), value, lo, hi, positive)
        return float(value)


def _check_range(key: str, value: float, lo: float | None, hi: float | None, positive: bool) -> None:
    if positive and value <= 0:
        raise ConfigError(key, f"must be > 0, got {value}")
    if lo is not None and value < lo:
        raise ConfigError(key, f"must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise ConfigError(key, f"must be <= {hi}, got {value}")


def _nonempty_string(value: object, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"must be a non-empty string, got {value!r}")
    return value


def _reachable_model(value: object, key: str, ctx: OptionContext) -> str:
    # A `default` entry in `models:` serves any name, so then every name is reachable.
    if not isinstance(value, str) or not value:
        raise ConfigError(key, f"must be a model name, got {value!r}")
    if value not in ctx.models and "default" not in ctx.models:
        raise ConfigError(key, f"model {value!r} is not in the models section")
    return value
