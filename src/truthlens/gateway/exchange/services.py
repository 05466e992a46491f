"""The collaborators modes use (detector, LLM client, embedder, tracer), built once per process
and kept in step with config reloads: each ``models:`` section is a generation with its own LLM
client, leased by the exchanges pinned to it and closed when the last of them ends after a reload
retired it; the embedder loads on first use, so a reload that turns on a mode needing it just
works. The tracer is the one of the process's own tracer provider
(:class:`truthlens.gateway.core.telemetry.Telemetry`), so the modes' and the LLM client's spans are
exported with the exchange's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from truthlens.detector.types import Detector
from truthlens.modes.base import Services

if TYPE_CHECKING:
    from truthlens.gateway.core.telemetry import Telemetry
    from truthlens.gateway.policy.config import Config
    from truthlens.llm import LLMClient

log = logging.getLogger(__name__)


class LazyEmbedder:
    """The shipped sentence embedder, loaded (off the event loop) the first time it is used."""

    def __init__(self) -> None:
        self._inner: Any = None
        self._lock = asyncio.Lock()

    async def _get(self) -> Any:
        if self._inner is None:
            async with self._lock:
                if self._inner is None:
                    from truthlens.evidence.embedder import OnnxEmbedder

                    self._inner = await asyncio.to_thread(OnnxEmbedder.load)
                    log.info("embedder loaded")
        return self._inner

    async def embed(self, texts: list[str]) -> Any:
        return await (await self._get()).embed(texts)

    async def token_embeddings(self, texts: list[str]) -> Sequence[Any]:
        vectors: Sequence[Any] = await (await self._get()).token_embeddings(texts)
        return vectors

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


@dataclass(eq=False)
class _Generation:
    """The services of one ``models:`` section and the exchanges still using them."""

    key: tuple[Any, ...]
    services: Services
    users: int = 0


class ServiceLease:
    """An exchange's hold on the services of its pinned config; :meth:`release` exactly once."""

    def __init__(self, provider: ServiceProvider, generation: _Generation) -> None:
        self._provider = provider
        self._generation: _Generation | None = generation
        self.services = generation.services

    def release(self) -> None:
        generation, self._generation = self._generation, None
        if generation is not None:
            self._provider._release(generation)


class ServiceProvider:
    """``acquire(config)`` → a lease on the :class:`Services` an exchange pinned to ``config`` uses.

    A config reload that changes ``models:`` makes a new generation current; the old one's LLM
    client is closed when the last exchange pinned to it ends (exchanges in flight keep the
    client they started with, and nothing leaks across many reloads)."""

    def __init__(self, detector: Detector, telemetry: Telemetry, confirmer: Detector | None = None) -> None:
        self.detector = detector
        self.confirmer = confirmer  # detector.confirm (loaded at start, like the detector)
        self._telemetry = telemetry
        self._embedder = LazyEmbedder()
        self._generations: dict[tuple[Any, ...], _Generation] = {}
        self._current: _Generation | None = None
        self._closing: set[asyncio.Task[None]] = set()
        # The config pinned last and its generation: every exchange pins the current config, and
        # sorting and hashing its ``models:`` for the lookup cost more than the rest of opening an
        # unchecked exchange (bench/extproc_profile.py). A reload's new config is looked up anew.
        # That generation is always the current one, so it is never retired while kept here.
        self._last: tuple[Config, _Generation] | None = None

    @classmethod
    async def start(cls, config: Config, telemetry: Telemetry) -> ServiceProvider:
        from truthlens.detector.backends.factory import create_confirmer, create_detector
        from truthlens.detector.manifest import ModelDirError
        from truthlens.gateway.policy.preflight import model_dir_error

        # Backends that call a model server themselves (llm) trace and count like every re-ask.
        hooks = telemetry.detector_hooks(config.models)
        # Loading the model takes a while; the loop keeps answering health checks meanwhile.
        try:
            detector = await asyncio.to_thread(create_detector, config.detector, hooks)
        except ModelDirError as exc:  # named by its key, like every other config error
            raise model_dir_error(exc) from exc
        provider = cls(detector, telemetry, create_confirmer(config.detector, hooks))
        provider.acquire(config).release()  # build the first generation now, not on the first request
        return provider

    def acquire(self, config: Config) -> ServiceLease:
        """Called when an exchange pins ``config``: the newest pinned config is the current one."""
        last = self._last
        if last is not None and last[0] is config:
            generation = last[1]
        else:
            key = tuple(sorted(config.models.items()))
            found = self._generations.get(key)
            if found is None:
                services = Services(detector=self.detector, llm=self._llm(config), embedder=self._embedder,
                                    tracer=self._telemetry.tracer, confirmer=self.confirmer)
                found = self._generations[key] = _Generation(key, services)
            generation = found
            self._last = (config, generation)
        if generation is not self._current:
            previous, self._current = self._current, generation
            if previous is not None:
                self._close_if_unused(previous)
        generation.users += 1
        return ServiceLease(self, generation)

    def open_generations(self) -> int:
        """How many ``models:`` generations still hold open clients (the current one included)."""
        return len(self._generations)

    def _release(self, generation: _Generation) -> None:
        generation.users -= 1
        self._close_if_unused(generation)

    def _close_if_unused(self, generation: _Generation) -> None:
        """A generation that is not current (a newer ``models:`` section is) closes once unused."""
        if generation is self._current or generation.users > 0:
            return
        self._generations.pop(generation.key, None)
        llm = generation.services.llm
        if llm is not None:
            task = asyncio.get_running_loop().create_task(llm.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
            log.info("closed the LLM client of a retired models section")

    def _llm(self, config: Config) -> LLMClient | None:
        if not config.models:
            return None
        from truthlens.llm import LLMClient

        recorders = self._telemetry.llm_recorders(config.models)
        return LLMClient(dict(config.models), on_call=recorders.on_call, on_outcome=recorders.on_outcome,
                         on_fallback=recorders.on_fallback, tracer=self._telemetry.tracer)

    def queue_depth(self) -> int | None:
        """Checks waiting for the detector, when the backend reports it."""
        depth = getattr(self.detector, "queue_depth", None)
        return depth if isinstance(depth, int) else None

    def backend_ready(self) -> bool:
        """Whether the detector can answer: a remote backend's server and model readiness; an
        in-process backend is ready once loaded, which it is whenever these services exist."""
        ready = getattr(self.detector, "backend_ready", None)
        return ready if isinstance(ready, bool) else True

    async def close(self) -> None:
        await self.detector.close()
        if self.confirmer is not None:
            await self.confirmer.close()
        for generation in self._generations.values():
            if generation.services.llm is not None:
                await generation.services.llm.aclose()
        self._generations.clear()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        self._embedder.close()
