"""ONNX Runtime session options on the detector's own rows, timed interleaved in one run.

The rows are the ones the whole check runs (``DetectorEngine``'s planner: grounded rows, each
distinct row once) for the RAGTruth QA inputs ``bench/detector_vs_lettucedetect.py`` reads
(training half, odd ``source_id``; first ``--n``). Each setting runs an item's rows the way the
in-process runner does on CPU: a lone row on one session with every core, several rows two at
a time on sessions of ``cores / 2`` threads each (``--serial`` settings instead run them one
after another on the every-core session). For every item the settings take turns (the order
rotates per item), so all see the same machine load; the table gives each setting's mean, p50
and p95 of an item's ONNX wall time and the ratio to the shipped options, and whether its
probabilities equal the shipped options' (max abs difference).

    python -m bench.onnx_session_options [--n 120] [--model DIR] [--only NAME,...]

Settings: ``shipped`` (what :mod:`truthlens.detector.backends.onnx` builds), ``extended``
(graph optimisation level EXTENDED), ``offline`` (the graph ONNX Runtime optimised at ALL, saved
once and loaded with optimisation off: start-up time, printed, and run time), ``no-arena``
(``enable_cpu_mem_arena`` off), ``no-mem-pattern``, ``block-base`` (``session.dynamic_block_base``
4 on the every-core session), ``wide-spin`` (the every-core session's workers spin),
``bound`` (IOBinding with the output bound to CPU memory ONNX Runtime allocates), ``serial``
(an item's rows one after another on the every-core session), ``serial-spin`` (the same with
spinning workers), ``lean`` (no arena, no memory pattern), ``lean-serial``. The machine is
shared: compare settings within one run only.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnxruntime as ort

from bench.detector_vs_lettucedetect import load_inputs, percentile
from truthlens.detector.backends.onnx import answer_probs, pad_rows, usable_cores
from truthlens.detector.encoding import ModelRow
from truthlens.detector.prompt import checked, model_questions
from truthlens.detector.scoring.token_scorer import distinct_rows

DEFAULT_INPUTS = Path("training/output/ragtruth/ragtruth_qa.jsonl")
DEFAULT_MODEL = Path("src/truthlens/detector/default_model")


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    level: ort.GraphOptimizationLevel = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    arena: bool = True
    mem_pattern: bool = True
    block_base: int = 0
    wide_spin: bool = False
    bound: bool = False
    serial: bool = False
    offline: bool = False


SETTINGS = (
    Setting("shipped"),
    Setting("extended", level=ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED),
    Setting("offline", offline=True),
    Setting("no-arena", arena=False),
    Setting("no-mem-pattern", mem_pattern=False),
    Setting("block-base", block_base=4),
    Setting("wide-spin", wide_spin=True),
    Setting("bound", bound=True),
    Setting("serial", serial=True),
    Setting("serial-spin", serial=True, wide_spin=True),
    Setting("lean", arena=False, mem_pattern=False),
    Setting("lean-serial", arena=False, mem_pattern=False, serial=True),
)


def item_rows(n: int, inputs: Path, model: Path) -> list[list[ModelRow]]:
    """Each input's distinct model rows, as the whole check plans them."""
    from truthlens.detector.backends.factory import create_detector
    from truthlens.detector.engine import DetectorEngine
    from truthlens.detector.types import DetectorSettings

    engine = create_detector(DetectorSettings(provider="cpu", model_dir=str(model)))
    assert isinstance(engine, DetectorEngine)
    scorer = engine._scorer  # the engine's own planner (bench only)
    out = []
    for item in load_inputs(inputs, n):
        item = checked(item)
        rows: list[ModelRow] = []
        for q in model_questions(item.question):
            plan = scorer._prepare(replace(item, question=q), engine.relevance).plan
            if plan is not None:
                rows.extend(plan.rows)
        out.append(distinct_rows(rows)[0])
    return out


class Runner:
    """One setting's sessions and its way of running an item's rows."""

    def __init__(self, setting: Setting, model: Path, offline_path: Path | None) -> None:
        self.setting = setting
        cores = usable_cores()
        path = offline_path if setting.offline and offline_path is not None else model / "model.onnx"
        started = time.perf_counter()
        self.split = self._session(path, max(1, cores // 2), spin=True)
        self.wide = self._session(path, cores, spin=setting.wide_spin, block_base=setting.block_base)
        self.load_s = time.perf_counter() - started
        self.pool = ThreadPoolExecutor(2)

    def _session(self, path: Path, threads: int, *, spin: bool, block_base: int = 0) -> ort.InferenceSession:
        s = self.setting
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL if s.offline else s.level
        options.intra_op_num_threads = threads
        options.enable_cpu_mem_arena = s.arena
        options.enable_mem_pattern = s.mem_pattern
        if not spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if block_base:
            options.add_session_config_entry("session.dynamic_block_base", str(block_base))
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def one(self, session: ort.InferenceSession, row: ModelRow) -> np.ndarray:
        feed = pad_rows([row], 0)
        if self.setting.bound:
            binding = session.io_binding()
            for name, value in feed.items():
                binding.bind_cpu_input(name, value)
            binding.bind_output("logits", "cpu")
            session.run_with_iobinding(binding)
            logits = binding.copy_outputs_to_cpu()[0]
        else:
            (logits,) = session.run(["logits"], feed)
        return answer_probs(logits, [row], 1)[0]

    def run(self, rows: Sequence[ModelRow]) -> list[np.ndarray]:
        if len(rows) == 1 or self.setting.serial:
            return [self.one(self.wide, r) for r in rows]
        return list(self.pool.map(lambda r: self.one(self.split, r), rows))


def offline_graph(model: Path, folder: Path) -> Path:
    """The graph as ONNX Runtime optimises it at level ALL, saved once (what a shipped or a
    first-load-saved optimised graph would be)."""
    out = folder / "optimized.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(out)
    ort.InferenceSession(str(model / "model.onnx"), options, providers=["CPUExecutionProvider"])
    return out


def timed(run: Callable[[], list[np.ndarray]]) -> tuple[float, list[np.ndarray]]:
    started = time.perf_counter()
    out = run()
    return (time.perf_counter() - started) * 1000.0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--inputs", type=Path, default=DEFAULT_INPUTS)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--only", default="", help="settings to time beside 'shipped' (comma-separated)")
    args = parser.parse_args()
    wanted = {s for s in args.only.split(",") if s}
    settings = [s for s in SETTINGS if s.name == "shipped" or not wanted or s.name in wanted]
    groups = item_rows(args.n, args.inputs, args.model)
    lengths = [r.length for g in groups for r in g]
    print(f"{len(groups)} inputs from {args.inputs}, {len(lengths)} rows ({len(lengths) / len(groups):.2f} per "
          f"input, length p50 {percentile(lengths, 50):.0f}), {args.model}, {usable_cores()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        offline = offline_graph(args.model, Path(tmp)) if any(s.offline for s in settings) else None
        runners = [Runner(s, args.model, offline) for s in settings]
        for r in runners:
            r.run(groups[0])  # warm-up
        ms: dict[str, list[float]] = {s.name: [] for s in settings}
        diff: dict[str, float] = {s.name: 0.0 for s in settings}
        rng = np.random.default_rng(0)
        for rows in groups:
            # A random order per item: a setting whose workers spin on after its run slows the
            # one after it, so no setting may always follow the same one.
            order = [runners[k] for k in rng.permutation(len(runners))]
            outs: dict[str, list[np.ndarray]] = {}
            for r in order:
                t, outs[r.setting.name] = timed(lambda r=r, rows=rows: r.run(rows))  # type: ignore[misc]
                ms[r.setting.name].append(t)
            for name, out in outs.items():
                gap = max(float(np.abs(a - b).max()) for a, b in zip(out, outs["shipped"], strict=True))
                diff[name] = max(diff[name], gap)
    base = ms["shipped"]
    print(f"{'setting':<16} {'load s':>7} {'mean ms':>8} {'p50 ms':>8} {'p95 ms':>8} {'mean x':>7} {'p95 x':>6} "
          f"{'paired x':>8} {'max |dp|':>9}")
    for r in runners:
        m = ms[r.setting.name]
        print(f"{r.setting.name:<16} {r.load_s:7.2f} {statistics.fmean(m):8.1f} {percentile(m, 50):8.1f} "
              f"{percentile(m, 95):8.1f} {statistics.fmean(base) / statistics.fmean(m):7.2f} "
              f"{percentile(base, 95) / percentile(m, 95):6.2f} {paired(base, m):8.2f} {diff[r.setting.name]:9.2e}")
    print("(x: the shipped options' time / the setting's; > 1 is faster; paired: the geometric mean of the "
          "per-input ratios. Load: both sessions.)")


def paired(base: Sequence[float], other: Sequence[float]) -> float:
    """The geometric mean over inputs of base / other: less moved by a few inputs that met a load spike."""
    return float(np.exp(np.mean(np.log(np.asarray(base) / np.asarray(other)))))


if __name__ == "__main__":
    main()
