"""The docs and the dashboard name each counter as Prometheus exports it (``..._total``): a name a
reader copies from the docs into a query must find the series.

Real: the gateway's metric registry, prometheus_client's exposition, the repository's docs."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from truthlens.gateway.core.telemetry import Telemetry

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "grafana" /
         "truthlens-dashboard.json", *sorted((ROOT / "src" / "truthlens").rglob("*.py"))]


def _counters() -> set[str]:
    registry = CollectorRegistry()
    Telemetry(registry=registry)
    exposed = generate_latest(registry).decode()
    # The family name, without the _total its samples carry (some exposition versions print it).
    return {name.removesuffix("_total") for name in re.findall(r"^# TYPE (truthlens_\w+) counter$", exposed, re.M)}


def test_counters_are_named_as_exported_everywhere() -> None:
    counters = _counters()
    assert "truthlens_models_used" in counters  # the family; its samples are truthlens_models_used_total
    wrong = []
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        for family in counters:
            for match in re.finditer(rf"\b{family}(?!_total)(?![\w])", text):
                line = text.count("\n", 0, match.start()) + 1
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {family} (exported as {family}_total)")
    assert wrong == []
