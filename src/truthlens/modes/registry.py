"""Mode name → module, imported only when a configuration names it.

A mode module exposes ``NAME``, ``REWRITES``, ``parse_options(raw, ctx) -> options`` (reads
``raw`` with :class:`truthlens.options.Section`, raising :class:`truthlens.options.ConfigError`
naming the key) and ``build() -> Mode``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Protocol, cast

from truthlens.modes.base import Mode
from truthlens.options import OptionContext

_MODE_MODULES: dict[str, str] = {
    "lightweight": "truthlens.modes.lightweight",
    "standard": "truthlens.modes.standard",
    "premium": "truthlens.modes.premium",
    "acr": "truthlens.modes.acr.mode",
    "auto": "truthlens.modes.escalation.auto",
    "adaptive": "truthlens.modes.adaptive",
}


class ModeModule(Protocol):
    NAME: str
    # Whether the mode may replace an answer (ChoiceVerdict.text or Verdict.abstain_message).
    # The gateway must then hold the streamed answer until the verdict, so this decides how
    # `streaming: auto` resolves and whether `passthrough` is allowed.
    REWRITES: bool

    def parse_options(self, raw: Mapping[str, Any], ctx: OptionContext) -> Any: ...

    def build(self) -> Mode: ...


def mode_names() -> tuple[str, ...]:
    return tuple(_MODE_MODULES)


def load_mode_module(name: str) -> ModeModule:
    """Import the module of mode ``name``; ``KeyError`` for an unknown name."""
    return cast(ModeModule, importlib.import_module(_MODE_MODULES[name]))
