"""A detector in a child process, for a bench that times another build beside this one.

Reads one JSON request per line on stdin and writes one JSON line per request on stdout:

- ``{"items": [{"context": [...], "question": ..., "answer": ...}, ...]}``: each item's whole
  check (``detect`` at the build's routes' default threshold, one caller), answered with ``{"checks": [{"ms", "status",
  "score", "rows", "spans"}, ...]}``;
- ``{"throughput": [items], "concurrency": N}``: the items checked by N asyncio callers,
  answered with ``{"checks_per_s": ...}``.

The detector is this process's build's default in-process one (``provider: cpu``, two runs in
flight), loaded before the first line is read (``{"ready": true}`` is written then), so model
loading never counts. :class:`ChildDetector` starts it in a commit's tree
(``bench/other_build.py``: the older build's code and model, this file's protocol) and talks to
it; ``bench.detector_vs_lettucedetect --beside COMMIT`` times it in turns with this build.

    python -m bench.detect_worker [--model DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import DetectionInput, DetectorSettings

try:  # the build's routes' default; builds before the calibrated score flagged at 0.5
    from truthlens.detector.calibration.probability import DEFAULT_THRESHOLD
except ImportError:  # pragma: no cover - an older build's tree
    DEFAULT_THRESHOLD = 0.5


class ChildDetector:
    """This module running in another build's tree: its checks, timed in the child."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process
        ready = self._read()
        if not ready.get("ready"):
            raise RuntimeError(f"the other build's worker did not start: {ready}")

    def checks(self, items: Sequence[DetectionInput]) -> list[dict[str, Any]]:
        """Each item's whole check in the child: ms, status, score, rows, spans."""
        return list(self._ask({"items": [_doc(i) for i in items]})["checks"])

    def throughput(self, items: Sequence[DetectionInput], concurrency: int) -> float:
        return float(self._ask({"throughput": [_doc(i) for i in items], "concurrency": concurrency})["checks_per_s"])

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the other build's worker exited ({self._process.wait()})")
        reply: dict[str, Any] = json.loads(line)
        return reply


@contextmanager
def child_at(commit: str) -> Iterator[ChildDetector]:
    """A :class:`ChildDetector` on ``commit``'s code and shipped model (this module copied in)."""
    from bench.other_build import tree_at

    with tree_at(commit, ["src"], this_tree=[Path(__file__).relative_to(Path.cwd())]) as (tmp, env):
        with subprocess.Popen([sys.executable, "-m", "bench.detect_worker"], cwd=tmp, env=env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE) as process:
            try:
                yield ChildDetector(process)
            finally:
                assert process.stdin is not None
                process.stdin.close()
                process.wait(timeout=60)


def _doc(item: DetectionInput) -> dict[str, Any]:
    return {"context": list(item.context), "question": item.question, "answer": item.answer}


def _item(doc: dict[str, Any]) -> DetectionInput:
    return DetectionInput(tuple(doc["context"]), str(doc["question"]), str(doc["answer"]))


async def serve(model: str | None) -> None:
    detector = create_detector(DetectorSettings(provider="cpu", max_in_flight=2, model_dir=model))
    await detector.detect(DetectionInput(("A warm-up passage.",), "Warm up?", "It warms up."), threshold=0.5)
    print(json.dumps({"ready": True}), flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        request = json.loads(line)
        if "throughput" in request:
            items = [_item(d) for d in request["throughput"]]
            started = time.perf_counter()
            await _all(detector, items, asyncio.Semaphore(int(request["concurrency"])))
            reply: dict[str, Any] = {"checks_per_s": len(items) / (time.perf_counter() - started)}
        else:
            checks = []
            for doc in request["items"]:
                started = time.perf_counter()
                found = await detector.detect(_item(doc), threshold=DEFAULT_THRESHOLD)
                checks.append({
                    "ms": (time.perf_counter() - started) * 1000, "status": found.status, "score": found.score,
                    "rows": found.chunks, "spans": [[s.start, s.end] for s in found.spans],
                })
            reply = {"checks": checks}
        print(json.dumps(reply), flush=True)
    await detector.close()


async def _all(detector: Any, items: Sequence[DetectionInput], gate: asyncio.Semaphore) -> None:
    async def one(item: DetectionInput) -> None:
        async with gate:
            await detector.detect(item, threshold=0.5)

    await asyncio.gather(*(one(i) for i in items))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="detector model directory (default: the build's shipped one)")
    asyncio.run(serve(parser.parse_args().model))


if __name__ == "__main__":
    main()
