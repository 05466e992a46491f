"""The one typed reader of configuration values: the gateway's config and every mode's options.

:class:`Section` wraps one mapping of the YAML document together with its dotted key path,
and reads each value as the type it must have. Every problem is a :class:`ConfigError` whose
``key`` is the full path of the offending key (``decisions[0].plugins[0].configuration.samples``),
so an operator can find it in the file; a wrong value is never replaced by a default.

While a :class:`SchemaRecorder` is active, every reader also records what it read (the key, its
type, default, range or allowed values) under the section's *schema path* (list indexes and
user-chosen names generalised): ``truthlens schema`` builds the JSON Schema from those records, so
the schema says what validation does. Recording never changes what a reader accepts.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
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

    __slots__ = ("raw", "path", "schema_path")

    def __init__(self, raw: object, path: str, schema_path: str | None = None) -> None:
        if raw is None:  # `section:` with nothing under it reads as YAML null
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(path or "(root)", f"must be a mapping, got {type(raw).__name__}")
        self.raw: Mapping[str, Any] = raw
        self.path = path
        # Where the schema puts this section's keys: decisions[3] -> decisions[] (see SchemaRecorder).
        self.schema_path = schema_path if schema_path is not None else _schema_path_of(path)

    # ------------------------------------------------------------------ structure

    def key(self, name: str) -> str:
        """The full dotted path of key ``name`` in this section."""
        return f"{self.path}.{name}" if self.path else name

    def allow(self, *names: str, hint: str | None = None) -> None:
        """Every key must be one of ``names``: a typo is an error, not an ignored key.
        ``hint`` replaces the list of expected keys in the message."""
        _record_keys(self, names)
        for k in self.raw:
            if k not in names:
                raise ConfigError(self.key(str(k)), f"unknown key ({hint or _unknown_key_hint(str(k), names)})")

    def declare(self, *names: str) -> None:
        """Record ``names`` as keys of this section for the schema, checking nothing: for a section
        whose keys are validated in two places (a route's generic keys here, its mode's keys by the mode)."""
        _record_keys(self, names)

    def require(self, *names: str) -> None:
        """Each of ``names`` must be present."""
        for name in names:
            _record(self, name, {}, required=True)
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

    def get(self, name: str, default: Any = None, *, schema: Mapping[str, Any] | None = None,
            required: bool = False) -> Any:
        """The raw value, unchecked: for values only the caller knows how to validate (``schema``:
        the JSON Schema of what the caller accepts, ``required``: whether it rejects an absent key;
        both only recorded for ``truthlens schema``)."""
        if schema is not None:
            _record(self, name, dict(schema), required=required)
        return self.raw.get(name, default)

    def section(self, name: str) -> Section:
        """The nested mapping under ``name`` (absent or null: empty)."""
        return Section(self.raw.get(name), self.key(name), f"{self.schema_path}.{name}".lstrip("."))

    def entry(self, name: str) -> Section:
        """The mapping under ``name``, a name the user chose (a model's name): the schema
        describes every such entry alike."""
        _recorder_map(self)
        return Section(self.raw.get(name), self.key(name), f"{self.schema_path}.*".lstrip("."))

    # ------------------------------------------------------------------ scalars

    def boolean(self, name: str, default: bool) -> bool:
        _record(self, name, {"type": "boolean", "default": default})
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise ConfigError(self.key(name), f"must be true or false, got {value!r}")
        return value

    def number(self, name: str, default: float, *, lo: float | None = None, hi: float | None = None,
               positive: bool = False) -> float:
        _record(self, name, _numeric("number", default, lo, hi, positive))
        value = self.raw.get(name, default)
        return self._number(name, value, lo, hi, positive)

    def optional_number(self, name: str, default: float | None = None, *, lo: float | None = None,
                        hi: float | None = None) -> float | None:
        """A number, or None when the value is null (or absent with no default): "not set"."""
        _record(self, name, _numeric(["number", "null"], default, lo, hi, False))
        value = self.raw.get(name, default)
        return None if value is None else self._number(name, value, lo, hi, False)

    def integer(self, name: str, default: int, *, lo: int | None = None, hi: int | None = None) -> int:
        _record(self, name, _numeric("integer", default, lo, hi, False))
        value = self.raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(self.key(name), f"must be an integer, got {value!r}")
        _check_range(self.key(name), value, lo, hi, positive=False)
        return value

    def optional_integer(self, name: str, *, lo: int | None = None, hi: int | None = None) -> int | None:
        """An integer, or None when the key is absent or null."""
        _record(self, name, _numeric(["integer", "null"], None, lo, hi, False))
        if self.raw.get(name) is None:
            return None
        with _unrecorded():  # recorded above as what it is: an integer or null
            return self.integer(name, 0, lo=lo, hi=hi)

    def string(self, name: str, default: str | None = None, *, allow_empty: bool = False) -> str:
        """A non-empty string (``allow_empty``: any string); with no default the key is required."""
        _record(self, name, _string_schema(default, allow_empty), required=default is None)
        value = self.raw.get(name, default)
        if allow_empty and isinstance(value, str):
            return value
        return _nonempty_string(value, self.key(name))

    def string_list(self, name: str) -> list[str]:
        """A required, non-empty list of non-empty strings."""
        _record(self, name, {"type": "array", "items": _string_schema(None, False), "minItems": 1}, required=True)
        value = self.raw.get(name)
        if not isinstance(value, list) or not value:
            raise ConfigError(self.key(name), "must be a non-empty list of strings")
        return [_nonempty_string(v, f"{self.key(name)}[{i}]") for i, v in enumerate(value)]

    def optional_string(self, name: str, default: str | None = None) -> str | None:
        """A non-empty string, or None when the value is null (or absent with no default)."""
        _record(self, name, {"anyOf": [_string_schema(default, False), {"type": "null"}]}
                | ({"default": default} if default is not None else {}))
        if self.raw.get(name, default) is None:
            return None
        with _unrecorded():
            return self.string(name, default)

    def choice(self, name: str, default: T, options: tuple[T, ...]) -> T:
        _record(self, name, {"enum": list(options), "default": default})
        value = self.raw.get(name, default)
        for option in options:  # hand back the declared option: its Literal type survives
            if value == option:
                return option
        raise ConfigError(self.key(name), f"must be one of {', '.join(options)}, got {value!r}")

    def http_url(self, name: str) -> str:
        """A required ``http://`` or ``https://`` URL with a host."""
        _record(self, name, {"type": "string", "pattern": "^https?://[^/]"}, required=True)
        with _unrecorded():
            url = self.string(name)
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ConfigError(self.key(name), f"must be an http:// or https:// URL, got {url!r}")
        return url

    def optional_http_url(self, name: str) -> str | None:
        _record(self, name, {"anyOf": [{"type": "string", "pattern": "^https?://[^/]"}, {"type": "null"}]})
        if self.raw.get(name) is None:
            return None
        with _unrecorded():
            return self.http_url(name)

    # ------------------------------------------------------------------ model names

    def model(self, name: str, ctx: OptionContext) -> str | None:
        """A model name the ``models:`` section can reach, or None when absent or null."""
        _record(self, name, {"type": ["string", "null"], "minLength": 1, "description": _MODEL_NAME})
        value = self.raw.get(name)
        return None if value is None else _reachable_model(value, self.key(name), ctx)

    def model_list(self, name: str, ctx: OptionContext) -> tuple[str, ...]:
        """A required, non-empty list of distinct reachable model names."""
        _record(self, name, {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1,
                             "uniqueItems": True, "description": _MODEL_NAME}, required=True)
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


def _unknown_key_hint(key: str, names: Sequence[str]) -> str:
    """``did you mean 'mode'?`` for a near miss, else the expected keys."""
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.75)
    expected = "expected one of " + ", ".join(names)
    return f"did you mean {close[0]!r}? {expected}" if close else expected


# ---------------------------------------------------------------------- schema recording

_MODEL_NAME = "the name of an entry of the models section"
_INDEX = re.compile(r"\[\d+\]")


@dataclass
class SchemaRecorder:
    """What the readers read while :meth:`recording`: per schema path (``decisions[].rules``,
    ``models.*``), each key's JSON Schema fragment, the section's allowed keys, its required keys."""

    keys: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)  # every fragment read
    allowed: dict[str, list[str]] = field(default_factory=dict)
    required: dict[str, set[str]] = field(default_factory=dict)
    maps: set[str] = field(default_factory=set)  # paths whose keys are names the user chose
    aliases: dict[str, str] = field(default_factory=dict)  # a section's path -> the schema path to use

    @contextmanager
    def recording(self) -> Iterator[SchemaRecorder]:
        token = _RECORDER.set(self)
        try:
            yield self
        finally:
            _RECORDER.reset(token)

    def note(self, path: str, name: str, fragment: dict[str, Any], required: bool) -> None:
        seen = self.keys.setdefault(path, {}).setdefault(name, [])
        if fragment not in seen:
            seen.append(fragment)
        if required:
            self.required.setdefault(path, set()).add(name)

    def fragment(self, path: str, name: str) -> dict[str, Any]:
        """What every read of ``path``'s key ``name`` agrees on: a key read with two defaults or
        ranges (another backend's) keeps neither, so the schema never refuses what one branch takes."""
        seen = self.keys.get(path, {}).get(name, [])
        if not seen:
            return {}
        return {k: v for k, v in seen[0].items() if all(k in f and f[k] == v for f in seen[1:])}


_RECORDER: ContextVar[SchemaRecorder | None] = ContextVar("truthlens_schema_recorder", default=None)


@contextmanager
def schema_alias(path: str, schema_path: str) -> Iterator[None]:
    """While recording, a section built for ``path`` records under ``schema_path`` instead: a
    route's mode options are the mode's own keys wherever they are written."""
    recorder = _RECORDER.get()
    if recorder is None:
        yield
        return
    before = recorder.aliases.get(path)
    recorder.aliases[path] = schema_path
    try:
        yield
    finally:
        if before is None:
            recorder.aliases.pop(path, None)
        else:
            recorder.aliases[path] = before


@contextmanager
def _unrecorded() -> Iterator[None]:
    """A reader calling another: only the outer one says what the key is."""
    token = _RECORDER.set(None)
    try:
        yield
    finally:
        _RECORDER.reset(token)


def _schema_path_of(path: str) -> str:
    recorder = _RECORDER.get()
    if recorder is not None:
        for aliased, schema_path in recorder.aliases.items():  # the section itself or one inside it
            if path == aliased or path.startswith(f"{aliased}."):
                return schema_path + path[len(aliased):]
    return _INDEX.sub("[]", path)


def _record(section: Section, name: str, fragment: dict[str, Any], *, required: bool = False) -> None:
    recorder = _RECORDER.get()
    if recorder is not None:
        recorder.note(section.schema_path, name, fragment, required)


def _record_keys(section: Section, names: Sequence[str]) -> None:
    recorder = _RECORDER.get()
    if recorder is not None:
        known = recorder.allowed.setdefault(section.schema_path, [])
        known.extend(n for n in names if n not in known)


def _recorder_map(section: Section) -> None:
    recorder = _RECORDER.get()
    if recorder is not None:
        recorder.maps.add(section.schema_path)


def _numeric(kind: str | list[str], default: float | None, lo: float | None, hi: float | None,
             positive: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind}
    if default is not None:
        out["default"] = default
    if lo is not None:
        out["minimum"] = lo
    if hi is not None:
        out["maximum"] = hi
    if positive:
        out["exclusiveMinimum"] = 0
    return out


def _string_schema(default: str | None, allow_empty: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string"}
    if not allow_empty:
        out["pattern"] = r"\S"  # not empty, not only spaces
    if default is not None:
        out["default"] = default
    return out
