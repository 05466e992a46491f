"""A mode given options its ``parse_options`` did not make fails loudly (TypeError), never
runs with silent defaults. Nothing runs past the check: the detector would fail the test."""

from __future__ import annotations

from typing import Any, NoReturn, cast

import pytest

from truthlens.detector.types import Detector
from truthlens.modes import registry
from truthlens.modes.base import Services
from truthlens.modes.lightweight import LightweightOptions
from truthlens.modes.standard import StandardOptions

from .conftest import exchange


class _UntouchedDetector:
    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f"the mode used the detector ({name}) before checking its options")


SERVICES = Services(detector=cast(Detector, _UntouchedDetector()))


@pytest.mark.parametrize("mode, wrong", [
    ("standard", LightweightOptions()),
    ("premium", StandardOptions()),
    ("acr", StandardOptions()),
    ("auto", StandardOptions()),
    ("standard", {"max_iterations": 2}),  # raw, unparsed options
])
async def test_options_of_the_wrong_type_are_a_type_error(mode: str, wrong: Any) -> None:
    module = registry.load_mode_module(mode)
    with pytest.raises(TypeError, match=f"mode {mode!r} needs .*Options, got {type(wrong).__name__}"):
        await module.build().run(exchange(["An answer."], mode=mode, options=wrong), SERVICES)
