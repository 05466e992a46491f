"""``truthlens detect``: check JSON lines of ``{"context", "question", "answer"}`` from a file or stdin.

Each input line gives exactly one output line, in order: ``{"score", "detected", "spans"}``
(each span ``{"start", "end", "text", "prob", "reason"}``, reason ``model`` or an
``unsupported_*`` fact the context never states)
or ``{"error": ...}`` for a line that could not be checked (bad JSON, wrong fields, detector
unavailable). Errors are also reported on stderr with their line number, and the exit
status is 1 when any line failed, 2 when the detector could not start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

from truthlens.detector.calibration.probability import DEFAULT_THRESHOLD
from truthlens.detector.types import (
    AGGREGATIONS,
    CHUNK_AGGREGATIONS,
    Detection,
    DetectionInput,
    Detector,
    DetectorError,
    DetectorSettings,
    InvalidInput,
)

BLOCK_LINES = 64  # lines checked concurrently; bounds memory for large files


@dataclass(frozen=True, slots=True)
class _Line:
    number: int
    item: DetectionInput | None
    error: str | None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="truthlens detect", description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="JSONL file, or - for stdin")
    parser.add_argument("--model", default=None, help="detector model directory (default: the shipped model)")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                        help=f"score at or above which an answer is detected "
                             f"(the routes' default, {DEFAULT_THRESHOLD:g})")
    parser.add_argument(
        "--token-threshold",
        type=float,
        default=None,
        help="per-token probability above which a token is hallucinated (default: the model's calibrated threshold)",
    )
    parser.add_argument(
        "--aggregation",
        choices=AGGREGATIONS,
        default=None,
        help="how spans become the answer's score (default: the model's calibrated choice)",
    )
    parser.add_argument(
        "--min-span-length",
        type=int,
        default=None,
        help="shortest span in characters that counts (default: the model's calibrated choice)",
    )
    parser.add_argument("--provider", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument(
        "--chunk-aggregation",
        choices=CHUNK_AGGREGATIONS,
        default=DetectorSettings().chunk_aggregation,
        help="context longer than one model window: judge each answer sentence beside its most relevant "
        "passages (grounded), or every sentence beside every chunk combined by max | min | best",
    )
    parser.add_argument(
        "--no-evidence-checks",
        dest="evidence_checks",
        action="store_false",
        help="the model alone: do not check the answer's numbers, dates and names against the context",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return int(exc.code or 0)
    if not 0.0 <= args.threshold <= 1.0:
        print("error: --threshold must be in [0, 1]", file=err)
        return 2
    settings = DetectorSettings(
        model_dir=args.model,
        provider=args.provider,
        token_threshold=args.token_threshold,
        aggregation=args.aggregation,
        min_span_length=args.min_span_length,
        chunk_aggregation=args.chunk_aggregation,
        evidence_checks=args.evidence_checks,
        max_in_flight=2,  # the gateway's in-process default (src/truthlens/gateway/policy/config.py)
    )
    try:
        source = sys.stdin.buffer if args.input == "-" else open(args.input, "rb")  # closed by the with below
    except OSError as exc:
        print(f"error: cannot read {args.input}: {exc}", file=err)
        return 2
    with source:
        return asyncio.run(_run(settings, args.threshold, source, out, err))


async def _run(settings: DetectorSettings, threshold: float, source: IO[bytes], out: IO[str], err: IO[str]) -> int:
    from truthlens.detector.backends.factory import create_detector

    try:
        detector = create_detector(settings)
    except (DetectorError, ValueError) as exc:
        print(f"error: detector could not start: {exc}", file=err)
        return 2
    failed = 0
    try:
        for block in _blocks(_read_lines(source), BLOCK_LINES):
            results = await asyncio.gather(*(_check(detector, line, threshold) for line in block))
            for line, (record, error) in zip(block, results, strict=True):
                if error is not None:
                    failed += 1
                    print(f"line {line.number}: {error}", file=err)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
    finally:
        await detector.close()
    return 1 if failed else 0


async def _check(detector: Detector, line: _Line, threshold: float) -> tuple[dict[str, Any], str | None]:
    if line.item is None:
        assert line.error is not None
        return {"error": line.error}, line.error
    try:
        detection = await detector.detect(line.item, threshold=threshold)
    except InvalidInput as exc:
        return {"error": str(exc)}, str(exc)
    if detection.status == "unavailable":
        message = f"detector unavailable: {detection.reason}"
        return {"error": message}, message
    return _record(detection), None


def _record(detection: Detection) -> dict[str, Any]:
    return {
        "score": detection.score,
        "detected": detection.detected,
        "spans": [
            {"start": s.start, "end": s.end, "text": s.text, "prob": s.prob, "reason": s.reason}
            for s in detection.spans
        ],
    }


def _read_lines(source: IO[bytes]) -> Iterator[_Line]:
    for number, raw in enumerate(source, start=1):
        yield _parse_line(number, raw)


def _parse_line(number: int, raw: bytes) -> _Line:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return _Line(number, None, f"not UTF-8: {exc}")
    except json.JSONDecodeError as exc:
        return _Line(number, None, f"not valid JSON: {exc}")
    if not isinstance(data, dict):
        return _Line(number, None, "expected a JSON object with context, question, answer")
    context, question, answer = data.get("context"), data.get("question"), data.get("answer")
    if not isinstance(context, list) or not all(isinstance(p, str) for p in context):
        return _Line(number, None, "'context' must be a list of strings")
    if not isinstance(question, str):
        return _Line(number, None, "'question' must be a string")
    if not isinstance(answer, str):
        return _Line(number, None, "'answer' must be a string")
    return _Line(number, DetectionInput(context=tuple(context), question=question, answer=answer), None)


def _blocks(lines: Iterator[_Line], size: int) -> Iterator[list[_Line]]:
    block: list[_Line] = []
    for line in lines:
        block.append(line)
        if len(block) == size:
            yield block
            block = []
    if block:
        yield block
