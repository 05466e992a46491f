"""What the detector-quality benches share: the shipped defaults' settings on this build, and
the plain-text table they print (``bench/detector_quality.py``, its ``--wordings`` table in
``bench/wording_table.py``, ``bench/summary_instruction.py``). Kept apart so that neither bench
imports the other."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from truthlens.detector.types import DetectorSettings


def settings_for(**overrides: object) -> DetectorSettings:
    """DetectorSettings with only the overrides this build knows."""
    known = {f.name for f in dataclasses.fields(DetectorSettings)}
    return DetectorSettings(provider="cpu", **{k: v for k, v in overrides.items() if k in known})  # type: ignore[arg-type]


def print_table(title: str, columns: Sequence[str], rows: dict[str, dict[str, str]]) -> None:
    """``rows`` (configuration → column → cell) under ``title``, one configuration a line."""
    print(title)
    width = max(len(n) for n in rows)
    print(f"{'configuration':<{width}}  " + "  ".join(f"{c:>{max(len(c), 7)}}" for c in columns))
    for name, row in rows.items():
        print(f"{name:<{width}}  " + "  ".join(f"{row.get(c, '-'):>{max(len(c), 7)}}" for c in columns))
    print()
