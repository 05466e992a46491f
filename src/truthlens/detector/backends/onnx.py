"""The ONNX Runtime backend: one inference session, provider choice, batch runs.

``load(settings)`` builds the complete detector (model directory → tokenizer, session,
micro-batcher, engine). Imports only onnxruntime, tokenizers and numpy.

On CPU each row runs alone at its own length and checks overlap instead of batching
(measured on 2 cores, ``bench/detector_vs_lettucedetect.py``): a padded batch spends its
padding on compute no core had idle, and dynamic int8 quantises activations with one scale
per tensor, so a row's probabilities would depend on its batch-mates. With
``batching.max_in_flight`` > 1 (default 2 in-process) the micro-batcher forms batches of one
row, that many runs go at once, and unless ``intra_op_threads`` is set the cores are split
between them; a row with nothing else running or waiting (one caller, a one-row check) runs
on a second session with every core instead (:func:`~truthlens.detector.batcher.batch_runs_alone`),
so a lone check does not leave cores idle. That session's workers sleep when idle rather than
spin (a spinning worker takes a core from the split runs that follow), and the relevance
embedder runs one single-threaded run per core for the same reason. A GPU gets padded batches
of ``batching.max_batch_size`` rows, as before.

The other session options stay ONNX Runtime's defaults (graph optimisation ALL, memory arena and
memory pattern on): timed interleaved on the detector's own rows of 120 RAGTruth QA inputs
(``bench/onnx_session_options.py``), optimisation level EXTENDED, a graph optimised once and
loaded with optimisation off, the arena or the memory pattern off, ``session.dynamic_block_base``,
IOBinding, and a check's rows one after another on the every-core session all ran within noise
of these (0.93-1.02x per input), and spinning workers on the every-core session slowed the runs
after them. The start-up log names the options in force, read back from the sessions
(:func:`options_text`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from typing import Literal

import numpy as np
import onnxruntime as ort

from truthlens.detector.batcher import batch_runs_alone
from truthlens.detector.encoding import ModelRow, TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import (
    ModelDirError,
    ModelManifest,
    load_manifest,
    load_members,
    resolve_model_dir,
)
from truthlens.detector.relevance import Relevance, load_relevance
from truthlens.detector.scoring.token_scorer import TokenScorer
from truthlens.detector.types import DetectorHooks, DetectorSettings

log = logging.getLogger(__name__)

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def choose_providers(requested: Literal["auto", "cpu", "cuda"], available: Sequence[str]) -> list[str]:
    """Execution providers in preference order for ``requested`` given what this build offers."""
    if requested == "cpu":
        return [CPU]
    if CUDA in available:
        return [CUDA, CPU]
    if requested == "cuda":
        log.warning("detector: provider 'cuda' requested but onnxruntime offers only %s; using CPU", list(available))
    return [CPU]


class OnnxRunner:
    """Runs padded batches of :class:`ModelRow` and returns P(hallucinated) of each row's answer tokens."""

    def __init__(self, manifest: ModelManifest, settings: DetectorSettings, pad_id: int) -> None:
        providers = choose_providers(settings.provider, ort.get_available_providers())
        self._session = _session(manifest, providers, intra_op_threads(settings, providers[0]))
        self.provider = self._session.get_providers()[0]
        # A lone row's session: every core (the split sessions would leave the others idle).
        self._wide = (
            _session(manifest, providers, usable_cores(), spinning=False)
            if self.provider == CPU and split_threads(settings, CPU) and usable_cores() > 1
            else None
        )
        if "CUDAExecutionProvider" in providers and self.provider != "CUDAExecutionProvider":
            # onnxruntime-gpu without a visible GPU (or without its CUDA libraries) falls back silently.
            log.warning("detector: CUDA was offered but no GPU session could be made; running on %s", self.provider)
        graph_inputs = [i.name for i in self._session.get_inputs()]
        missing = [name for name in graph_inputs if name not in manifest.inputs]
        if missing:
            raise ModelDirError(f"{manifest.model_path}: graph needs inputs {missing} the manifest does not list")
        self._inputs = tuple(graph_inputs)
        self._output = self._session.get_outputs()[0].name
        self._index = manifest.hallucinated_index
        self._pad_id = pad_id
        # CPU: each row at its own length (module docstring); a GPU fills its batch.
        self.rows_alone = self.provider == CPU

    def options_text(self) -> str:
        """The sessions' options as loaded (for the start-up log)."""
        text = options_text(self._session)
        return text if self._wide is None else f"{text}; every-core session {options_text(self._wide)}"

    @property
    def sessions(self) -> int:
        """Sessions loaded: 2 when lone rows get a session with every core."""
        return 1 if self._wide is None else 2

    def run(self, rows: Sequence[ModelRow]) -> list[np.ndarray]:
        session = self._wide if self._wide is not None and batch_runs_alone() else self._session
        if self.rows_alone and len(rows) > 1:
            return [self._run_padded(session, [row])[0] for row in rows]
        return self._run_padded(session, rows)

    def _run_padded(self, session: ort.InferenceSession, rows: Sequence[ModelRow]) -> list[np.ndarray]:
        feed = pad_rows(rows, self._pad_id)
        (logits,) = session.run([self._output], {name: feed[name] for name in self._inputs})
        return answer_probs(logits, rows, self._index)


def _session(
    manifest: ModelManifest, providers: list[str], threads: int, *, spinning: bool = True
) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads > 0:
        options.intra_op_num_threads = threads
    if not spinning:
        # Idle workers sleep at once instead of spinning on cores the next runs need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(manifest.model_path), options, providers=providers)
    except Exception as exc:  # onnxruntime raises its own untyped errors for bad graphs
        raise ModelDirError(f"{manifest.model_path}: onnxruntime cannot load it ({exc})") from exc


def options_text(session: ort.InferenceSession) -> str:
    """What ``session`` runs with beside its threads, read back from it: graph optimisation level,
    execution mode, memory arena and pattern, whether idle workers spin."""
    options = session.get_session_options()
    try:
        spinning = options.get_session_config_entry("session.intra_op.allow_spinning") != "0"
    except Exception:  # onnxruntime raises when the entry was never set: its default spins
        spinning = True
    level = options.graph_optimization_level.name.removeprefix("ORT_").removeprefix("ENABLE_").lower()
    mode = options.execution_mode.name.removeprefix("ORT_").lower()
    arena = "on" if options.enable_cpu_mem_arena else "off"
    pattern = "on" if options.enable_mem_pattern else "off"
    return (f"graph optimisation {level.replace('_', ' ')}, {mode}, arena {arena}, memory pattern {pattern}, "
            f"idle workers {'spin' if spinning else 'sleep'}")


def intra_op_threads(settings: DetectorSettings, provider: str) -> int:
    """Threads per model run: the configured number, else on CPU the cores shared between the
    ``max_in_flight`` runs that go at once (0: onnxruntime's default, all cores)."""
    if not split_threads(settings, provider):
        return settings.intra_op_threads
    return max(1, usable_cores() // settings.max_in_flight)


def split_threads(settings: DetectorSettings, provider: str) -> bool:
    """Whether the engine picks the threads per run: on CPU, unset, several runs at once."""
    return settings.intra_op_threads == 0 and provider == CPU and settings.max_in_flight > 1


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# The CPU's int8 dot-product instructions, best first: ONNX Runtime's kernels (MLAS) pick the
# best the CPU has when a session loads; the start-up log names it, since int8's speed-up over
# fp32 depends on it (VNNI does a 4-way int8 multiply-add per lane in one instruction).
_INT8_KERNELS = (
    ("amx_int8", "AMX"),
    ("avx512_vnni", "AVX512-VNNI"),
    ("avx_vnni", "AVX-VNNI"),
    ("avx512bw", "AVX512"),
    ("avx2", "AVX2"),
)


def int8_kernels(cpuinfo: str | None = None) -> str:
    """The int8 instruction set ONNX Runtime's CPU kernels use here (from ``/proc/cpuinfo``'s
    flags; "unknown" where it cannot be read)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                cpuinfo = f.read()
        except OSError:
            return "unknown"
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            break
    if not flags:
        return "unknown"
    return next((name for flag, name in _INT8_KERNELS if flag in flags), "SSE")


def pad_rows(rows: Sequence[ModelRow], pad_id: int) -> dict[str, np.ndarray]:
    """The model's int64 input tensors for ``rows``, right-padded to the longest row
    (shared with the remote backend, so both feed the model byte-identical batches)."""
    width = max(r.length for r in rows)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    types = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : row.length] = row.ids
        mask[i, : row.length] = 1
        types[i, : row.length] = row.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def answer_probs(logits: np.ndarray, rows: Sequence[ModelRow], index: int) -> list[np.ndarray]:
    """P(label ``index``) of each row's answer tokens from ``[batch, length, labels]`` logits."""
    probs = _softmax_at(np.asarray(logits, dtype=np.float32), index)
    return [probs[i, r.answer_start : r.answer_start + r.answer_len].copy() for i, r in enumerate(rows)]


def grounded_relevance(settings: DetectorSettings) -> Relevance | None:
    """The context ranking of "grounded" rows: the shipped sentence embedder (word overlap,
    with a warning, when it cannot load); the other aggregations never need one."""
    if settings.chunk_aggregation != "grounded":
        return None
    if split_threads(settings, CPU):
        # One single-threaded run per core: no thread pool whose spinning workers would take
        # cores from the model rows running beside the embedder.
        relevance = load_relevance(1, parallel_runs=usable_cores())
    else:
        relevance = load_relevance(settings.intra_op_threads)
    log.info("detector: grounded rows rank context by %s relevance", relevance.name)
    return relevance


def _softmax_at(logits: np.ndarray, index: int) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return np.asarray(exp[..., index] / exp.sum(axis=-1), dtype=np.float32)


def load(settings: DetectorSettings, hooks: DetectorHooks | None = None) -> DetectorEngine:
    """The ONNX detector for ``settings`` (the shipped model when ``model_dir`` is None), with its
    ensemble members' models beside it when the manifest names any.
    ``hooks`` go unused: in-process runs make no calls of their own to trace or count."""
    manifest = load_manifest(resolve_model_dir(settings.model_dir))
    members = load_members(manifest)
    encoder, runner = _model(manifest, settings)
    if runner.rows_alone and settings.max_in_flight > 1:
        # Rows run one at a time anyway: batches of one let max_in_flight runs overlap.
        settings = dataclasses.replace(settings, max_batch_size=1)
    scorers = []
    for member in members:
        member_encoder, member_runner = _model(member, settings)
        scorers.append(TokenScorer(
            settings, member_encoder, member_runner.run, max_length=member.max_length,
            lone_rows_take_all=member_runner.sessions > 1,
        ))
    engine = DetectorEngine(
        settings, manifest, encoder, runner.run, provider=runner.provider, relevance=grounded_relevance(settings),
        lone_rows_take_all=runner.sessions > 1, members=scorers,
    )
    log.info(
        "detector: %s on %s (requested %s), %d runs at once on %s%s, batches of %d, max_length %d, quantization %s "
        "(int8 kernels: %s), session: %s, token threshold %.2f%s",
        manifest.directory,
        runner.provider,
        settings.provider,
        settings.max_in_flight,
        _threads_text(settings, runner.provider),
        " (a lone row on every core)" if runner.sessions > 1 else "",
        settings.max_batch_size,
        manifest.max_length,
        manifest.quantization,
        int8_kernels() if runner.provider == CPU else "n/a",
        runner.options_text(),
        engine.token_threshold,
        "".join(f", ensemble member {m.directory}" for m in members),
    )
    return engine


def _threads_text(settings: DetectorSettings, provider: str) -> str:
    threads = intra_op_threads(settings, provider)
    return f"{threads} thread{'s' * (threads != 1)} each of {usable_cores()} cores" if threads else "every core"


def _model(manifest: ModelManifest, settings: DetectorSettings) -> tuple[TextEncoder, OnnxRunner]:
    try:
        encoder = TextEncoder(manifest.tokenizer_path)
    except Exception as exc:  # tokenizers raises plain Exception for unreadable files
        raise ModelDirError(f"{manifest.tokenizer_path}: cannot load tokenizer ({exc})") from exc
    return encoder, OnnxRunner(manifest, settings, encoder.pad_id)
