"""``gateway.max_streams`` (validated, named in errors) and the worker's lifecycle: the stream
count and the drain that makes running checks give way."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
import yaml

from truthlens.gateway.exchange.lifecycle import Draining, Lifecycle
from truthlens.gateway.policy.config import DEFAULT_MAX_STREAMS, parse_config
from truthlens.options import ConfigError
from truthlens.testing.launch import SHIPPED_CONFIG


def _doc(**gateway: Any) -> dict[str, Any]:
    doc = copy.deepcopy(yaml.safe_load(SHIPPED_CONFIG.read_text(encoding="utf-8")))
    doc["detector"]["model"] = "builtin"
    if gateway:
        doc["gateway"] = gateway
    return doc


def test_max_streams_defaults_and_is_validated() -> None:
    assert parse_config(_doc()).max_streams == DEFAULT_MAX_STREAMS
    assert parse_config(_doc(max_streams=3)).max_streams == 3
    for bad in (0, -1, "many", True):
        with pytest.raises(ConfigError, match=r"gateway\.max_streams"):
            parse_config(_doc(max_streams=bad))
    with pytest.raises(ConfigError, match=r"gateway\.max_stream"):
        parse_config(_doc(max_stream=3))


def test_the_stream_count_stops_at_the_cap() -> None:
    life = Lifecycle()
    assert life.try_open(2) and life.try_open(2)
    assert not life.try_open(2)
    life.close()
    assert life.try_open(2)


async def test_a_drain_makes_running_checks_give_way_and_lets_quick_ones_finish() -> None:
    life = Lifecycle()
    assert await life.bounded(asyncio.sleep(0, result="quick")) == "quick"
    life.begin_drain(0.1)  # checks give way after 60 ms
    assert await life.bounded(asyncio.sleep(0.01, result="in time")) == "in time"
    with pytest.raises(Draining):
        await life.bounded(asyncio.sleep(5))
    with pytest.raises(Draining):  # after the release, nothing new starts
        await life.bounded(asyncio.sleep(0))
