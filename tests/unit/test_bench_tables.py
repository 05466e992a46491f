"""bench/detector_quality.py: another build's rows are read back from its printed tables, one
table at a time (the tables share column names)."""

from __future__ import annotations

import pytest

from bench.detector_quality import build_rows, print_table, table_rows


def test_each_table_keeps_its_own_cells_under_a_shared_column_name(capsys: pytest.CaptureFixture[str]) -> None:
    print_table("first", ["qa F1", "qa AUROC"], {"shipped (defaults)": {"qa F1": "0.628", "qa AUROC": "0.808"},
                                                 "other": {"qa F1": "0.100", "qa AUROC": "0.200"}})
    print_table("second", ["qa F1", "s"], {"shipped (defaults)": {"qa F1": "0.840", "s": "713"}})
    printed = capsys.readouterr().out
    assert table_rows(printed, "shipped (defaults)") == [
        {"qa F1": "0.628", "qa AUROC": "0.808"},
        {"qa F1": "0.840", "s": "713"},
    ]


def test_the_long_context_pair_is_read_from_its_own_table_or_an_older_builds_halueval_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    row = "shipped (defaults)"
    print_table("RAGTruth", ["qa F1"], {row: {"qa F1": "0.628"}})
    print_table("HaluEval", ["qa F1"], {row: {"qa F1": "0.840"}})
    print_table("pair", ["20k faithful", "20k wrong year"], {row: {"20k faithful": "clean", "20k wrong year": "detected"}})
    assert build_rows(capsys.readouterr().out) == (
        {"qa F1": "0.628"}, {"qa F1": "0.840"}, {"20k faithful": "clean", "20k wrong year": "detected"})
    print_table("RAGTruth", ["qa F1"], {row: {"qa F1": "0.622"}})
    print_table("HaluEval; long-context pair", ["qa F1", "20k faithful", "20k wrong year"],
                {row: {"qa F1": "0.877", "20k faithful": "clean", "20k wrong year": "detected @year"}})
    rag, hal, pair = build_rows(capsys.readouterr().out)
    assert rag == {"qa F1": "0.622"} and hal["qa F1"] == "0.877"
    assert pair == {"20k faithful": "clean", "20k wrong year": "detected @year"}
