"""bench/detector_quality.py: another build's rows are read back from its printed tables, one
table at a time (the tables share column names)."""

from __future__ import annotations

import pytest

from bench.detector_quality import print_table, table_rows


def test_each_table_keeps_its_own_cells_under_a_shared_column_name(capsys: pytest.CaptureFixture[str]) -> None:
    print_table("first", ["qa F1", "qa AUROC"], {"shipped (defaults)": {"qa F1": "0.628", "qa AUROC": "0.808"},
                                                 "other": {"qa F1": "0.100", "qa AUROC": "0.200"}})
    print_table("second", ["qa F1", "s"], {"shipped (defaults)": {"qa F1": "0.840", "s": "713"}})
    printed = capsys.readouterr().out
    assert table_rows(printed, "shipped (defaults)") == [
        {"qa F1": "0.628", "qa AUROC": "0.808"},
        {"qa F1": "0.840", "s": "713"},
    ]
