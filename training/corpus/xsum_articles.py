"""XSum article texts by BBC id, read from the files of the GitHub repository ``Liyan06/AggreFact``.

The XSum hallucination annotations (:mod:`training.corpus.xsum_faith`) give summaries and
spans but not the articles; AggreFact redistributes the articles beside its own labels, in
``data/AggreFact-Unified-{val,test}.xlsx`` (column ``doc`` of the XSum sheets) and
``data/error_type_mapping/{CLIFF,Goyal21}_error_types.csv``. Only the article text is taken
from them here: AggreFact's labels are a benchmark's and are not trained on (see
``training/README.md``). The workbooks are read with the standard library (an ``.xlsx`` is a
zip of XML sheets with inline strings), so no spreadsheet package is needed.
"""

from __future__ import annotations

import csv
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

WORKBOOKS = ("data/AggreFact-Unified-val.xlsx", "data/AggreFact-Unified-test.xlsx")
ERROR_LISTS = ("data/error_type_mapping/CLIFF_error_types.csv", "data/error_type_mapping/Goyal21_error_types.csv")
_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def _cell(cell: ET.Element) -> str:
    if cell.get("t") == "inlineStr":
        return "".join(t.text or "" for t in cell.iter(f"{_NS}t"))
    value = cell.find(f"{_NS}v")
    return value.text or "" if value is not None else ""


def sheet_rows(xml: bytes) -> list[dict[str, str]]:
    """The rows of one worksheet (inline strings) as dicts keyed by the first row."""
    data = ET.fromstring(xml).find(f"{_NS}sheetData")
    rows = [[_cell(c) for c in r.findall(f"{_NS}c")] for r in (data if data is not None else [])]
    if not rows:
        return []
    return [dict(zip(rows[0], r, strict=False)) for r in rows[1:]]


def articles(root: Path) -> dict[str, str]:
    """BBC id → XSum article, from every AggreFact file that carries XSum documents."""
    out: dict[str, str] = {}
    for name in WORKBOOKS:
        with zipfile.ZipFile(root / name) as book:
            for member in sorted(book.namelist()):
                if member.startswith("xl/worksheets/") and member.endswith(".xml"):
                    for row in sheet_rows(book.read(member)):
                        if row.get("origin") == "xsum" and row.get("doc"):
                            out.setdefault(row["id"], row["doc"])
    csv.field_size_limit(sys.maxsize)
    for name in ERROR_LISTS:
        with (root / name).open(encoding="utf-8", newline="") as f:
            for record in csv.DictReader(f):
                if record["origin"] == "xsum" and record["doc"]:
                    out.setdefault(record["id"], record["doc"])
    return out
