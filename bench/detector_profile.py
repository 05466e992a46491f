"""Where the time of one check goes: the share of each stage, for the detector and the processor.

1. **The detector** (``DetectorEngine.detect``, the in-process defaults: two runs in flight, a
   lone row on every core), on the RAGTruth QA inputs ``bench/detector_vs_lettucedetect.py``
   reads (training half, odd ``source_id``; first ``--n``), then on new 2k- and 8k-token contexts
   (``bench/detector_length_scaling.make_context``), each context's first check, one caller.
   Stages (wall ms per check, each timed where it runs, exclusive of the stages it calls):
   reading the task (``prompt.checked``), tokenising (every ``TextEncoder`` call), relevance and
   the embedder (``Relevance.scores``: word overlap + sentence embeddings), planning rows (the
   rest of the planner), ONNX Runtime (each ``session.run`` with its padding and softmax), the
   fact check, the verdict (spans, the learned verdict's signals and, when it reads them, the
   embedder's support scores) and explanations. The fact check runs beside the model, so the
   stages' sum may exceed the check's wall time; the share column is of that sum, and
   "unattributed" is the wall time no stage covers (asyncio, the micro-batcher, thread hand-offs).
   With ``--second`` each input is then checked again with a new answer on the same context
   (the first input's answer swapped in): what a second answer on a known context costs.
2. **The processor** on a detection-off exchange (a decision with ``enabled: false``, as
   ``bench.gateway_throughput`` configures it): Envoy's two messages (request headers, a RAG
   request body with the context field; the reply to the headers asks for nothing of the
   response) through ``Stream.handle`` in process, no gRPC. Stages: decoding (``ProcessingRequest.FromString``),
   encoding (``SerializeToString`` of the replies), and, from ``cProfile``'s own time per
   function inside ``handle``: policy (``gateway/policy/``), the forged-verdict scrub
   (``apis/forged.py``, ``apis/json_doc.py``), request reading (``apis/`` otherwise), telemetry
   (``core/telemetry.py`` and prometheus), the exchange's state machine and phases
   (``gateway/exchange/``), the rest. cProfile slows Python code more than C code, so the
   in-handle shares are of the profiled time; the decode / encode / handle split is timed
   without it.

    python -m bench.detector_profile [--n 120] [--long 3] [--second] [--exchanges 2000]
        [--only detector|processor] [--model DIR]

The machine is shared: read the shares, and compare builds in one run (``bench/other_build.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import random
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

DEFAULT_INPUTS = Path("training/output/ragtruth/ragtruth_qa.jsonl")
STAGES = (
    "reading the task",
    "tokenising",
    "relevance + embedder",
    "planning rows",
    "ONNX Runtime",
    "fact check",
    "verdict",
    "explanations",
)


class StageClock:
    """Wall time per stage, exclusive of the stages timed inside it (a stack per thread)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._local = threading.local()
        self._lock = threading.Lock()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        stack: list[list[float]] = self._local.__dict__.setdefault("stack", [])
        frame = [time.perf_counter(), 0.0]  # start, time of nested stages
        stack.append(frame)
        try:
            yield
        finally:
            stack.pop()
            spent = time.perf_counter() - frame[0]
            if stack:
                stack[-1][1] += spent
            with self._lock:
                self.totals[name] += spent - frame[1]
                self.calls[name] += 1

    def reset(self) -> None:
        self.totals.clear()
        self.calls.clear()


def _wrap_sync(clock: StageClock, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        with clock.stage(name):
            return fn(*args, **kwargs)
    return timed


def _wrap_async(clock: StageClock, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:  # an awaited stage: its wall time, nothing nested is timed inside it
            with clock._lock:
                clock.totals[name] += time.perf_counter() - started
                clock.calls[name] += 1
    return timed


def instrument(engine: Any, clock: StageClock) -> None:
    """Times the stages of ``engine``'s checks (patches its modules' names; a bench-only process)."""
    from truthlens.detector import engine as engine_module
    from truthlens.detector import grounding
    from truthlens.detector.backends import onnx
    from truthlens.detector.encoding import TextEncoder
    from truthlens.detector.scoring import token_scorer

    for method in ("encode", "encode_many", "count"):
        setattr(TextEncoder, method, _wrap_sync(clock, "tokenising", getattr(TextEncoder, method)))
    relevance = engine.relevance
    relevance.scores = _wrap_sync(clock, "relevance + embedder", relevance.scores)
    for name in ("plan_grounded", "plan_rows"):
        setattr(token_scorer, name, _wrap_sync(clock, "planning rows", getattr(token_scorer, name)))
    # The row-building helpers the planner calls (pair rows, prompts): planning, not tokenising.
    grounding.context_pieces = _wrap_sync(clock, "planning rows", grounding.context_pieces)
    token_scorer.distinct_rows = _wrap_sync(clock, "planning rows", token_scorer.distinct_rows)
    onnx.OnnxRunner._run_padded = _wrap_sync(clock, "ONNX Runtime", onnx.OnnxRunner._run_padded)  # type: ignore[method-assign]
    engine_module.checked = _wrap_sync(clock, "reading the task", engine_module.checked)
    engine_module.check_facts = _wrap_sync(clock, "fact check", engine_module.check_facts)
    engine_module.fused = _wrap_sync(clock, "fact check", engine_module.fused)
    for name in ("score_answer", "signals_for", "support_scores"):
        setattr(engine_module, name, _wrap_sync(clock, "verdict", getattr(engine_module, name)))
    engine_module.label = _wrap_sync(clock, "explanations", engine_module.label)
    engine_module.explained = _wrap_async(clock, "explanations", engine_module.explained)
    token_scorer.aggregate = _wrap_sync(clock, "verdict", token_scorer.aggregate)


def print_stages(title: str, clock: StageClock, walls: Sequence[float], rows: Sequence[int]) -> None:
    checks = len(walls)
    total = sum(clock.totals.values())
    wall = sum(walls)
    print(f"\n{title}: {checks} checks, wall mean {statistics.fmean(walls) * 1000:.1f} ms "
          f"(p50 {statistics.median(walls) * 1000:.1f}), {statistics.fmean(rows):.2f} rows per check")
    print(f"  {'stage':<24} {'ms/check':>9} {'share':>7} {'calls/check':>12}")
    for name in STAGES:
        spent = clock.totals.get(name, 0.0)
        print(f"  {name:<24} {spent / checks * 1000:>9.2f} {spent / max(total, 1e-9):>7.1%} "
              f"{clock.calls.get(name, 0) / checks:>12.1f}")
    print(f"  {'sum of stages':<24} {total / checks * 1000:>9.2f}   (wall {wall / checks * 1000:.2f}; "
          f"unattributed {max(wall - total, 0.0) / checks * 1000:.2f} ms/check)")


async def profile_detector(args: argparse.Namespace) -> None:
    from bench.detector_length_scaling import ANSWER, QUESTION, make_context
    from bench.detector_vs_lettucedetect import load_inputs
    from truthlens.detector.backends.factory import create_detector
    from truthlens.detector.engine import DetectorEngine
    from truthlens.detector.types import DetectionInput, DetectorSettings

    settings = DetectorSettings(provider="cpu", max_in_flight=2, model_dir=str(args.model) if args.model else None)
    engine = create_detector(settings)
    assert isinstance(engine, DetectorEngine)
    clock = StageClock()
    instrument(engine, clock)
    items = load_inputs(args.inputs, args.n)
    await engine.detect(DetectionInput(("A warm-up passage.",), "Warm up?", "It warms up."), threshold=0.5)
    clock.reset()

    async def run(title: str, batch: Sequence[DetectionInput]) -> None:
        clock.reset()
        walls, rows = [], []
        for item in batch:
            started = time.perf_counter()
            detection = await engine.detect(item, threshold=0.5)
            walls.append(time.perf_counter() - started)
            rows.append(detection.chunks)
        print_stages(title, clock, walls, rows)

    print(f"detector {engine.manifest.directory} ({engine.manifest.quantization}), provider {engine.provider}, "
          f"relevance {engine.relevance.name}; one caller, each context's first check")
    await run(f"RAGTruth QA training half ({args.inputs}, first {len(items)})", items)
    if args.second and items:
        # A second answer on each (already checked) context: another input's answer.
        seconds = [replace(item, answer=items[(i + 1) % len(items)].answer) for i, item in enumerate(items)]
        await run("the same contexts, a second answer each", seconds)
    if args.long:
        rng = random.Random(7)
        encoder = engine._scorer._encoder  # the model's own tokenizer, for the context length
        for length in (2048, 8192):
            batch = [DetectionInput(tuple(make_context(encoder, length, rng)), QUESTION, ANSWER)
                     for _ in range(args.long)]
            await run(f"new {length}-token context, a two-sentence answer", batch)
    await engine.close()


# -- the processor ---------------------------------------------------------------------------------


def _exchange_messages() -> list[bytes]:
    """Envoy's two messages of one detection-off chat exchange, serialised as on the wire: the
    reply to the request headers moves the exchange onto the unchecked route and asks for the
    body only (the context field is cut out of it), nothing of the response."""
    from bench.gateway_throughput import BODY
    from truthlens._proto import truthlens_ext_proc_pb2 as pb

    req = pb.ProcessingRequest()
    for key, value in {
        ":path": "/v1/chat/completions", ":method": "POST", ":authority": "127.0.0.1:10000", ":scheme": "http",
        "content-type": "application/json", "content-length": str(len(BODY)), "user-agent": "bench",
        "x-request-id": "8d3d0b8e-4a57-4a55-9d1e-1f0c1d2b3c4d", "x-forwarded-proto": "http",
    }.items():
        h = req.request_headers.headers.headers.add()
        h.key = key
        h.raw_value = value.encode()
    attrs = req.attributes["envoy.filters.http.ext_proc"]
    attrs.fields["request.path"].string_value = "/v1/chat/completions"
    attrs.fields["request.method"].string_value = "POST"
    body = pb.ProcessingRequest()
    body.request_body.body = BODY
    body.request_body.end_of_stream = True
    return [m.SerializeToString() for m in (req, body)]

_BUCKETS = (
    ("gateway/apis/forged.py", "forged-verdict scrub"),
    ("gateway/apis/json_doc.py", "forged-verdict scrub"),
    ("gateway/policy/", "policy"),
    ("gateway/apis/", "request/response reading"),
    ("gateway/core/telemetry.py", "telemetry"),
    ("prometheus_client", "telemetry"),
    ("opentelemetry", "telemetry"),
    ("gateway/exchange/", "exchange state machine + phases"),
)


def _bucket(filename: str, function: str) -> str:
    for marker, name in _BUCKETS:
        if marker in filename:
            return name
    if "SerializeToString" in function or "FromString" in function or "ParseFromString" in function:
        return "protobuf inside phases"
    if "json" in filename or "loads" in function or "dumps" in function:
        return "JSON (stdlib/orjson)"
    return "other (asyncio, builtins)"


async def profile_processor(args: argparse.Namespace) -> None:
    from prometheus_client import CollectorRegistry

    from bench.gateway_throughput import decisions
    from truthlens._proto import truthlens_ext_proc_pb2 as pb
    from truthlens.gateway.core.telemetry import Telemetry
    from truthlens.gateway.exchange.lifecycle import Lifecycle
    from truthlens.gateway.exchange.phases.state import Runtime
    from truthlens.gateway.exchange.services import ServiceProvider
    from truthlens.gateway.exchange.stream import Stream
    from truthlens.gateway.policy.config_store import ConfigStore
    from truthlens.testing import launch

    wire = _exchange_messages()
    with tempfile.TemporaryDirectory(prefix="truthlens-profile-") as tmp:
        config = Path(tmp) / "config.yaml"
        config.write_text(launch.config_yaml(None, "http://127.0.0.1:9/v1", decisions=decisions(False)),
                          encoding="utf-8")
        telemetry = Telemetry(registry=CollectorRegistry())
        store = ConfigStore(str(config), telemetry=telemetry)
        services = await ServiceProvider.start(store.current, telemetry)
        runtime = Runtime(config=store, services=services, telemetry=telemetry, lifecycle=Lifecycle())

        decode_s = handle_s = encode_s = 0.0

        async def exchange() -> int:
            nonlocal decode_s, handle_s, encode_s
            stream = Stream(runtime)
            replies = 0
            try:
                for raw in wire:
                    t0 = time.perf_counter()
                    msg = pb.ProcessingRequest.FromString(raw)
                    t1 = time.perf_counter()
                    reply = await stream.handle(msg)
                    t2 = time.perf_counter()
                    for r in reply if isinstance(reply, list) else [reply] if reply is not None else []:
                        r.SerializeToString()
                        replies += 1
                    t3 = time.perf_counter()
                    decode_s += t1 - t0
                    handle_s += t2 - t1
                    encode_s += t3 - t2
            finally:
                stream.close()
            return replies

        for _ in range(200):  # warm-up
            await exchange()
        decode_s = handle_s = encode_s = 0.0
        replies = 0
        started = time.perf_counter()
        for _ in range(args.exchanges):
            replies += await exchange()
        wall = time.perf_counter() - started
        n = args.exchanges
        total = decode_s + handle_s + encode_s
        print(f"\nprocessor, detection-off chat exchange ({len(wire)} messages, {replies / n:.0f} replies; "
              f"{len(wire[1])}-byte request), {n} exchanges in process, no gRPC:")
        print(f"  {'stage':<36} {'us/exchange':>11} {'share':>7}")
        for name, spent in (("decoding (FromString)", decode_s), ("Stream.handle", handle_s),
                            ("encoding the replies", encode_s)):
            print(f"  {name:<36} {spent / n * 1e6:>11.1f} {spent / total:>7.1%}")
        print(f"  {'(loop wall)':<36} {wall / n * 1e6:>11.1f}")

        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.exchanges):
            await exchange()
        profiler.disable()
        stats = pstats.Stats(profiler)
        own: dict[str, float] = defaultdict(float)
        for (filename, _line, function), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
            if function == "exchange" or "detector_profile" in filename:
                continue
            own[_bucket(filename, function)] += tottime
        handled = sum(own.values())
        print(f"  inside Stream.handle (cProfile own time, {handled / n * 1e6:.1f} us/exchange profiled):")
        for name, spent in sorted(own.items(), key=lambda kv: -kv[1]):
            print(f"    {name:<34} {spent / n * 1e6:>11.1f} {spent / handled:>7.1%}")
        if args.top:
            print("  top functions by own time:")
            stats.sort_stats("tottime").print_stats(args.top)
        await services.close()


async def main_async(args: argparse.Namespace) -> None:
    if args.only in (None, "detector"):
        await profile_detector(args)
    if args.only in (None, "processor"):
        await profile_processor(args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, default=DEFAULT_INPUTS, help="RAGTruth QA JSONL (training half read)")
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--long", type=int, default=3, help="new contexts per long length (0: skip)")
    parser.add_argument("--second", action="store_true", help="also a second answer on each checked context")
    parser.add_argument("--model", type=Path, default=None, help="detector model directory (default: shipped)")
    parser.add_argument("--exchanges", type=int, default=2000)
    parser.add_argument("--top", type=int, default=0, help="also print the N functions with most own time")
    parser.add_argument("--only", choices=("detector", "processor"), default=None)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
