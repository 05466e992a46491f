"""The remote backend: model rows run on an Open Inference Protocol (KServe v2) server.

Everything but the model stays in the gateway: the engine tokenises with the local model
directory's tokenizer, plans rows, aggregates and scores exactly as in-process; only the
padded int64 batches go to the server (Triton, KServe, any v2 server hosting the same ONNX
graph, e.g. from ``truthlens export --triton-repo``) and only the logits come back, so a
remote and an in-process detector on the same model give the same verdicts.

Failure is never "clean": a server that is down, not ready, too slow (``remote.timeout_ms``
per batch call) or answering with the wrong tensors turns each affected check into
``unavailable`` with reason ``remote_unavailable``, ``remote_timeout`` or ``remote_error``.
Each call's deadline is ``remote.timeout_ms`` or, when sooner, the moment the last check
waiting for the batch runs out of its route's detection budget.
A health thread polls server and model readiness (``backend_ready``, exported as the
``truthlens_detector_backend_ready`` gauge); while the server is not ready, batches fail at
once instead of waiting out their deadline, and checks resume when it is ready again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from truthlens.detector.backends.oip import DATATYPES, ModelMetadata, OipClient, RemoteError
from truthlens.detector.backends.onnx import answer_probs, grounded_relevance, pad_rows
from truthlens.detector.batcher import batch_time_left
from truthlens.detector.encoding import ModelRow, TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import (
    ModelDirError,
    ModelManifest,
    load_manifest,
    require_single_model,
    resolve_model_dir,
)
from truthlens.detector.types import DetectorHooks, DetectorSettings, RemoteSettings

log = logging.getLogger(__name__)

_INDEX_TYPES = ("INT64", "INT32")
_LOGIT_TYPES = ("FP32", "FP16")


@dataclass(frozen=True, slots=True)
class _Io:
    """The tensors to send (name, datatype) and the logits output to read."""

    inputs: tuple[tuple[str, str], ...]
    output: str


def plan_io(metadata: ModelMetadata, manifest: ModelManifest) -> _Io:
    """Match the server's model signature to what the manifest says the model takes.

    Raises :class:`RemoteError` (``remote_error``) naming the mismatch: a server hosting a
    different model must not produce verdicts."""
    problems = []
    inputs = []
    for spec in metadata.inputs:
        if spec.name not in manifest.inputs:
            problems.append(f"input {spec.name!r} is not one the manifest lists {manifest.inputs}")
        elif spec.datatype not in _INDEX_TYPES:
            problems.append(f"input {spec.name!r} is {spec.datatype}, not INT64/INT32")
        else:
            inputs.append((spec.name, spec.datatype))
    if "input_ids" not in [name for name, _ in inputs]:
        problems.append("the model takes no 'input_ids'")
    logits = [o for o in metadata.outputs if o.datatype in _LOGIT_TYPES]
    if not logits:
        problems.append(f"no FP32/FP16 output (outputs: {[(o.name, o.datatype) for o in metadata.outputs]})")
    elif logits[0].shape and logits[0].shape[-1] not in (-1, len(manifest.labels)):
        problems.append(
            f"output {logits[0].name!r} has {logits[0].shape[-1]} labels, the manifest {len(manifest.labels)}"
        )
    if problems:
        raise RemoteError(
            "remote_error", f"model {metadata.name!r} does not match {manifest.directory}: " + "; ".join(problems)
        )
    return _Io(inputs=tuple(inputs), output=logits[0].name)


class RemoteRunner:
    """Runs padded batches on the server; keeps its readiness current in a health thread."""

    def __init__(self, remote: RemoteSettings, manifest: ModelManifest, pad_id: int) -> None:
        self.remote = remote
        self._manifest = manifest
        self._pad_id = pad_id
        self._timeout_s = remote.timeout_ms / 1000.0
        self._client = OipClient(remote.url, channels=remote.channels, tls=remote.tls)
        self._io: _Io | None = None
        self._ready = False
        self.not_ready_reason = "remote_unavailable"
        self._stop = threading.Event()
        self._health: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        return self._ready

    def check_health(self) -> bool:
        """Poll server and model readiness (and the model's signature after each outage); update ``ready``."""
        name, version = self.remote.model_name, self.remote.model_version
        probe_s = min(self._timeout_s, 2.0)
        ok = self._client.server_ready(probe_s) and self._client.model_ready(name, version, probe_s)
        if ok and self._io is None:
            try:
                self._io = plan_io(self._client.model_metadata(name, version, probe_s), self._manifest)
            except RemoteError as exc:
                if self.not_ready_reason != exc.reason or self._ready:
                    log.error("detector: remote model unusable: %s", exc)
                self.not_ready_reason = exc.reason
                ok = False
        elif not ok:
            self.not_ready_reason = "remote_unavailable"
            self._io = None  # a server that comes back may host another model: check it again
        if ok != self._ready:
            log.log(logging.INFO if ok else logging.WARNING, "detector: remote model %r at %s is %s",
                    name, self.remote.url, "ready" if ok else "NOT ready")
        self._ready = ok
        return ok

    def start(self) -> None:
        self.check_health()
        self._health = threading.Thread(target=self._watch, name="detector-remote-health", daemon=True)
        self._health.start()

    def _watch(self) -> None:
        while not self._stop.wait(self.remote.health_interval_s):
            try:
                self.check_health()
            except Exception:  # the watcher must outlive any surprise; the next poll retries
                log.exception("detector: remote health check failed")

    def run(self, rows: Sequence[ModelRow]) -> list[np.ndarray]:
        io = self._io
        if not self._ready or io is None:
            raise RemoteError(
                self.not_ready_reason, f"remote model {self.remote.model_name!r} at {self.remote.url} is not ready"
            )
        # The call's deadline: remote.timeout_ms, or less when every check waiting for this
        # batch gives up sooner (their routes' detection budgets).
        timeout_s = self._timeout_s
        left = batch_time_left()
        if left is not None:
            if left <= 0:
                raise RemoteError("remote_timeout", "the checks waiting for this batch are out of time")
            timeout_s = min(timeout_s, left)
        feed = pad_rows(rows, self._pad_id)
        inputs = {name: feed[name].astype(DATATYPES[datatype], copy=False) for name, datatype in io.inputs}
        try:
            out = self._client.infer(
                self.remote.model_name, self.remote.model_version, inputs, [io.output], timeout_s=timeout_s
            )
        except RemoteError as exc:
            if exc.reason == "remote_unavailable":
                self._ready = False  # fail the next batches at once; the health thread restores it
            raise
        logits = out[io.output]
        if logits.ndim != 3 or logits.shape[:2] != feed["input_ids"].shape:
            raise RemoteError(
                "remote_error", f"output {io.output!r} has shape {logits.shape} for input {feed['input_ids'].shape}"
            )
        return answer_probs(logits, rows, self._manifest.hallucinated_index)

    def close(self) -> None:
        self._stop.set()
        if self._health is not None:
            self._health.join(timeout=5)
        self._client.close()


class RemoteDetector(DetectorEngine):
    """The engine over a :class:`RemoteRunner`; ``backend_ready`` feeds the readiness gauge."""

    def __init__(self, settings: DetectorSettings, manifest: ModelManifest, encoder: TextEncoder,
                 runner: RemoteRunner) -> None:
        super().__init__(settings, manifest, encoder, runner.run, provider=f"remote:{runner.remote.url}",
                         relevance=grounded_relevance(settings))
        self.runner = runner

    @property
    def backend_ready(self) -> bool:
        return self.runner.ready

    async def close(self) -> None:
        await super().close()
        await asyncio.to_thread(self.runner.close)


def load(settings: DetectorSettings, hooks: DetectorHooks | None = None) -> RemoteDetector:
    """The remote detector for ``settings``; starts even when the server is not up yet (its
    checks are unavailable until it is), so gateways and model servers start in any order.
    ``hooks`` go unused: batch calls are timed by the gateway's detect spans, not traced apart."""
    if settings.remote is None:
        raise ValueError("invalid detector settings: backend 'remote' needs a 'remote' section")
    manifest = load_manifest(resolve_model_dir(settings.model_dir))
    # One remote model answers each row; an ensemble's members would each need their own.
    require_single_model(manifest)
    try:
        encoder = TextEncoder(manifest.tokenizer_path)
    except Exception as exc:  # tokenizers raises plain Exception for unreadable files
        raise ModelDirError(f"{manifest.tokenizer_path}: cannot load tokenizer ({exc})") from exc
    runner = RemoteRunner(settings.remote, manifest, encoder.pad_id)
    runner.start()
    log.info("detector: %s on remote model %r at %s (ready: %s)", manifest.directory,
             settings.remote.model_name, settings.remote.url, runner.ready)
    return RemoteDetector(settings, manifest, encoder, runner)
