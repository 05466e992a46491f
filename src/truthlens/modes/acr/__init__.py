"""ACR fusion (context–memory conflict resolution): the math, the E/K agents and the mode.

The math is re-exported lazily so ``import truthlens.modes.acr`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "calibrate",
    "conflict_information",
    "fusion_weight",
    "in_uncertainty_zone",
    "stability",
]

_HOMES = {
    "calibrate": "truthlens.modes.acr.calibration",
    "conflict_information": "truthlens.modes.acr.fusion",
    "fusion_weight": "truthlens.modes.acr.fusion",
    "in_uncertainty_zone": "truthlens.modes.acr.fusion",
    "stability": "truthlens.modes.acr.fusion",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'truthlens.modes.acr' has no attribute {name!r}")
