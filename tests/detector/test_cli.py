"""``truthlens detect`` round trip: one output line per input line, in order, errors in place.

Real ONNX Runtime on the hand-weighted lookup model from ``conftest.py``; nothing scripted.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from truthlens.detector.cli import main

GOOD = {"context": ["Paris is the capital of France."], "question": "Capital?", "answer": "It is Lyon."}
CLEAN = {"context": ["Paris is the capital of France."], "question": "Capital?", "answer": "It is Paris."}


def _run(argv: list[str]) -> tuple[int, list[dict], str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_round_trip_keeps_order(tmp_path: Path, tiny_model_dir: Path) -> None:
    lines = [GOOD, CLEAN] * 40  # more than one concurrent block
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    code, records, err = _run(["--input", str(source), "--model", str(tiny_model_dir)])
    assert code == 0 and err == ""
    assert len(records) == 80
    for i, record in enumerate(records):
        if i % 2 == 0:
            assert record["detected"] is True and record["score"] > 0.5
            # The model flags "Lyon" and the fact check finds no Lyon in the context: the span
            # carries the fact's reason.
            assert record["spans"] == [{"start": 6, "end": 10, "text": "Lyon", "prob": record["spans"][0]["prob"],
                                        "reason": "unsupported_entity"}]
        else:
            assert record == {"score": 0.0, "detected": False, "spans": []}


def test_bad_lines_get_error_records_in_place(tmp_path: Path, tiny_model_dir: Path) -> None:
    source = tmp_path / "in.jsonl"
    rows = [
        json.dumps(GOOD),
        "{not json",
        json.dumps({"context": "str", "question": "q", "answer": "a"}),
        json.dumps({"context": [], "question": "q"}),
        json.dumps({**GOOD, "answer": "x" * 300_000}),
        json.dumps(CLEAN),
    ]
    source.write_bytes(("\n".join(rows) + "\n").encode() + b"\xff\xfe\n")
    code, records, err = _run(["--input", str(source), "--model", str(tiny_model_dir), "--threshold", "0.5"])
    assert code == 1
    assert len(records) == 7
    assert records[0]["detected"] is True and records[5]["detected"] is False
    assert "not valid JSON" in records[1]["error"]
    assert "'context' must be a list" in records[2]["error"]
    assert "'answer' must be a string" in records[3]["error"]
    assert "max_answer_chars" in records[4]["error"]
    assert "not UTF-8" in records[6]["error"]
    for number in (2, 3, 4, 5, 7):
        assert f"line {number}:" in err
    assert "line 1:" not in err and "line 6:" not in err


def test_stdin_and_start_failures(tmp_path: Path, tiny_model_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from truthlens.detector.cli import main; sys.exit(main(sys.argv[1:]))",
         "--input", "-", "--model", str(tiny_model_dir)],
        input=json.dumps(GOOD) + "\n", capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["spans"][0]["text"] == "Lyon"
    code, records, err = _run(["--input", str(tmp_path / "missing.jsonl"), "--model", str(tiny_model_dir)])
    assert code == 2 and records == [] and "cannot read" in err
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD) + "\n")
    code, records, err = _run(["--input", str(source), "--model", str(tmp_path / "no-model")])
    assert code == 2 and "detector could not start" in err and "does not exist" in err
    code, _, err = _run(["--input", str(source), "--threshold", "2"])
    assert code == 2 and "--threshold" in err


def test_chunk_aggregation_option(tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from truthlens.detector.cli import build_parser

    assert build_parser().parse_args(["--input", "-"]).chunk_aggregation == "grounded"
    long_line = {**GOOD, "context": ["The river runs past the old mill and the bridge. " * 8] * 40}
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(long_line) + "\n")
    for choice in ("grounded", "max", "min", "best"):
        code, records, err = _run(["--input", str(source), "--model", str(tiny_model_dir), "--chunk-aggregation", choice])
        assert code == 0 and records[0]["spans"][0]["text"] == "Lyon", (choice, err)
    code, records, _ = _run(["--input", str(source), "--chunk-aggregation", "mean"])
    assert code == 2 and records == [] and "--chunk-aggregation" in capsys.readouterr().err  # argparse's usage error
