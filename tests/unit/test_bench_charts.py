"""The benchmarks' charts (bench/charts.py): the quality chart reads the tables bench.detector_quality
prints (here its saved output, bench/results/) into balanced accuracy per set, and each chart is
written as a PNG. Drawing needs matplotlib (the ``bench`` extra, which CI installs); without it
only the drawing tests skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import charts

SAVED = Path(__file__).resolve().parents[2] / "bench" / "results" / "detector_quality-run9.txt"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_the_saved_quality_output_gives_every_configurations_balanced_accuracy_per_set() -> None:
    scores = charts.balanced_accuracy_by_task(charts.parse_tables(SAVED.read_text(encoding="utf-8")))
    # The four configurations with numbers; the published anchors (one pooled figure each) are left out.
    assert list(scores) == [
        "previous shipped (run 6, its defaults)",
        "previous shipped (run 6, its defaults), span rule alone",
        "shipped (defaults)",
        "shipped (defaults), span rule alone",
    ]
    shipped = scores["shipped (defaults)"]
    # RAGTruth's balanced accuracy columns and HaluEval's accuracy columns of the saved tables.
    assert shipped == {
        "RAGTruth QA": 0.737, "RAGTruth summary": 0.663, "RAGTruth data-to-text": 0.672,
        "HaluEval QA": 0.877, "HaluEval summarization": 0.827, "HaluEval dialogue": 0.703,
    }


def test_a_table_row_with_a_missing_number_is_left_out() -> None:
    text = (
        "configuration  decision  qa BA  summary BA  data2txt BA\n"
        "a              rule       0.700       0.600        0.650\n"
        "anchor            -          -           -            -\n"
        "\n"
        "configuration  qa acc  summarization acc  dialogue acc\n"
        "a               0.800              0.700         0.600\n"
    )
    assert list(charts.balanced_accuracy_by_task(charts.parse_tables(text))) == ["a"]


def test_the_quality_chart_is_written_as_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the bench extra (matplotlib) draws the charts")
    out = charts.main(["quality", str(SAVED), "--out", str(tmp_path / "q.png")])
    assert out == 0 and (tmp_path / "q.png").read_bytes()[:8] == PNG_MAGIC


def test_the_latency_chart_is_written_as_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the bench extra (matplotlib) draws the charts")
    series = {"grounded": [(300, 120.0), (1080, 450.0)], "max": [(300, 118.0), (1080, 600.0)]}
    path = charts.latency_by_length({"wall ms": series, "CPU ms": series}, tmp_path / "l.png", "latency")
    assert path.read_bytes()[:8] == PNG_MAGIC
