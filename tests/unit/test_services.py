"""Services per config generation: an exchange keeps the LLM client of the config it pinned,
and a client a reload retired is closed when the last exchange using it ends.

The cascade's confirmer (``detector.confirm``) loads once at start, like the detector, and every
generation's services carry it. Real parts: the shipped detector in ONNX Runtime, configs parsed
from YAML-shaped mappings, the real LLM client (never called here)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from truthlens.detector.backends.llm import LlmDetector
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.exchange.services import ServiceProvider
from truthlens.gateway.policy.config import Config, parse_config

pytestmark = pytest.mark.asyncio(loop_scope="module")


def config(base_url: str) -> Config:
    return parse_config({"version": 1, "models": {"default": {"base_url": base_url}}})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> AsyncIterator[ServiceProvider]:
    p = await ServiceProvider.start(config("http://127.0.0.1:9/v1"), Telemetry(registry=CollectorRegistry()))
    yield p
    await p.close()


def spy_on_close(services: Any, closed: list[str], name: str) -> None:
    client = services.llm
    real = client.aclose

    async def aclose() -> None:
        closed.append(name)
        await real()

    client.aclose = aclose


async def test_a_retired_client_closes_when_its_last_exchange_ends(provider: ServiceProvider) -> None:
    closed: list[str] = []
    first = provider.acquire(config("http://127.0.0.1:9/v1"))
    spy_on_close(first.services, closed, "first")
    same = provider.acquire(config("http://127.0.0.1:9/v1"))
    assert same.services is first.services  # an unchanged models section shares its client

    second = provider.acquire(config("http://127.0.0.1:10/v1"))  # a reload changed models:
    assert second.services.llm is not first.services.llm
    first.release()
    await asyncio.sleep(0)
    assert closed == []  # one exchange still runs on the old client
    same.release()
    same.release()  # a second release of one lease changes nothing
    await asyncio.sleep(0.05)
    assert closed == ["first"] and provider.open_generations() == 1
    second.release()
    assert provider.open_generations() == 1  # the current generation stays open unused


async def test_many_reloads_leave_one_open_client(provider: ServiceProvider) -> None:
    for port in range(20, 40):
        provider.acquire(config(f"http://127.0.0.1:{port}/v1")).release()
    await asyncio.sleep(0.05)
    assert provider.open_generations() == 1


async def test_a_confirmer_loads_at_start_reaches_every_generation_and_closes() -> None:
    doc = {"version": 1, "detector": {"confirm": {"model": "spans"}},
           "models": {"default": {"base_url": "http://127.0.0.1:9/v1"}, "spans": {"base_url": "http://127.0.0.1:9/v1"}}}
    started = await ServiceProvider.start(parse_config(doc), Telemetry(registry=CollectorRegistry()))
    confirmer = started.confirmer
    assert isinstance(confirmer, LlmDetector) and confirmer.llm.role == "confirm"
    lease = started.acquire(parse_config(doc))
    assert lease.services.confirmer is confirmer
    lease.release()
    closed: list[bool] = []
    real = confirmer.close

    async def close() -> None:
        closed.append(True)
        await real()

    confirmer.close = close  # type: ignore[method-assign]
    await started.close()
    assert closed == [True]
    plain = await ServiceProvider.start(config("http://127.0.0.1:9/v1"), Telemetry(registry=CollectorRegistry()))
    assert plain.confirmer is None and plain.acquire(config("http://127.0.0.1:9/v1")).services.confirmer is None
    await plain.close()


async def test_the_config_pinned_last_keeps_its_generation_until_it_retires(provider: ServiceProvider) -> None:
    """Exchanges pinning the same config object share its generation without looking it up again;
    once a reload retired that generation and its client closed, the same config object gets a
    new generation (a new client), never the closed one."""
    pinned = config("http://127.0.0.1:50/v1")
    first = provider.acquire(pinned)
    again = provider.acquire(pinned)
    assert again.services is first.services
    equal = provider.acquire(config("http://127.0.0.1:50/v1"))  # a reload that left models: as they were
    assert equal.services is first.services
    for lease in (first, again, equal):
        lease.release()
    provider.acquire(config("http://127.0.0.1:51/v1")).release()  # a reload changed models:
    await asyncio.sleep(0.05)
    back = provider.acquire(pinned)
    assert back.services is not first.services and back.services.llm is not first.services.llm
    assert provider.open_generations() == 1
    back.release()
