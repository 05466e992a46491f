"""The collaborators modes use (detector, LLM client, embedder, tracer), built once per process
and kept in step with config reloads: the LLM client follows the config's ``models`` section, and
the embedder loads on first use, so a reload that turns on a mode needing it just works. The
tracer is the one of the process's own tracer provider (:class:`truthlens.gateway.telemetry.Telemetry`),
so the modes' and the LLM client's spans are exported with the exchange's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from truthlens.modes.base import Services
from truthlens.detector.types import Detector

if TYPE_CHECKING:
    from truthlens.gateway.config import Config
    from truthlens.gateway.telemetry import Telemetry
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


class ServiceProvider:
    """``for_config(config)`` → the :class:`Services` an exchange pinned to ``config`` uses."""

    def __init__(self, detector: Detector, telemetry: Telemetry) -> None:
        self.detector = detector
        self._telemetry = telemetry
        self._embedder = LazyEmbedder()
        self._by_models: dict[tuple[Any, ...], Services] = {}

    @classmethod
    async def start(cls, config: Config, telemetry: Telemetry) -> ServiceProvider:
        from truthlens.detector.factory import create_detector

        # Loading the model takes a while; the loop keeps answering health checks meanwhile.
        detector = await asyncio.to_thread(create_detector, config.detector)
        provider = cls(detector, telemetry)
        provider.for_config(config)
        return provider

    def for_config(self, config: Config) -> Services:
        key = tuple(sorted(config.models.items()))
        services = self._by_models.get(key)
        if services is None:
            services = Services(detector=self.detector, llm=self._llm(config), embedder=self._embedder,
                                tracer=self._telemetry.tracer)
            # Clients of earlier configs stay open: exchanges pinned to them may still run.
            self._by_models[key] = services
        return services

    def _llm(self, config: Config) -> LLMClient | None:
        if not config.models:
            return None
        from truthlens.llm import LLMClient

        return LLMClient(dict(config.models), on_call=self._telemetry.record_model_call,
                         tracer=self._telemetry.tracer)

    def queue_depth(self) -> int | None:
        """Checks waiting for the detector, when the backend reports it."""
        depth = getattr(self.detector, "queue_depth", None)
        return depth if isinstance(depth, int) else None

    def backend_ready(self) -> bool | None:
        """Whether a remote detector's inference server is ready; None for in-process backends."""
        ready = getattr(self.detector, "backend_ready", None)
        return ready if isinstance(ready, bool) else None

    async def close(self) -> None:
        await self.detector.close()
        for services in self._by_models.values():
            if services.llm is not None:
                await services.llm.aclose()
        self._embedder.close()
