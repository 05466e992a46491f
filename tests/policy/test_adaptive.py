"""mode: adaptive — options, Thompson sampling, the real stores (an SQLite file; a real
redis-server started here), POST /v1/feedback and a store that is down."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from truthlens.gateway.core.probes import probe_app
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.policy.adaptive import bandit
from truthlens.gateway.policy.adaptive.choice import STORE_DOWN, Bandits, choose_arm, record_cost
from truthlens.gateway.policy.adaptive.store import RedisStore, SqliteStore, now
from truthlens.gateway.policy.config import Config, parse_config
from truthlens.gateway.server.feedback import FeedbackHandler
from truthlens.options import ConfigError

from .redis_server import free_port, redis_server


def _config(store: str, **options: Any) -> Config:
    return parse_config({"version": 1, "decisions": [{
        "name": "help", "rules": {"type": "path", "prefix": "/v1"},
        "plugins": [{"type": "hallucination", "configuration": {
            "mode": "adaptive", "arms": ["lightweight", "standard"], "store": store, **options}}]}]})


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


def test_adaptive_options_are_validated() -> None:
    cfg = _config("sqlite:/tmp/x.sqlite3", feedback_window_s=60, price_per_second=0.1, memory=500)
    route = cfg.decisions[0].route
    assert route is not None and route.mode == "adaptive" and route.streaming == "hold"  # an arm may rewrite
    assert route.options.arms == ("lightweight", "standard") and route.options.memory == 500
    for bad, key in [({"arms": ["lightweight"]}, "arms"), ({"arms": ["lightweight", "adaptive"]}, "arms[1]"),
                     ({"store": "postgres://x"}, "store"), ({"premium": {}}, "premium"),
                     ({"arms": "standard"}, "arms")]:
        with pytest.raises(ConfigError) as err:
            _config("sqlite:x", **bad) if "store" not in bad else _config(bad["store"])
        assert err.value.key.endswith(key), err.value


def test_thompson_sampling_finds_the_best_arm_and_pays_for_cost() -> None:
    rng = random.Random(7)
    stats = {"a": bandit.ArmStats(), "b": bandit.ArmStats()}
    truth = {"a": 0.6, "b": 0.8}
    picks = {"a": 0, "b": 0}
    for _ in range(2000):
        arm = bandit.choose(stats, ("a", "b"), rng)
        picks[arm] += 1
        s = stats[arm]
        alpha, beta = bandit.updated(s.alpha, s.beta, rng.random() < truth[arm])
        stats[arm] = bandit.ArmStats(alpha, beta)
    assert picks["b"] > 0.85 * 2000, picks
    # The better arm costs 0.5 of an unhappy user per request: the cheap one wins.
    costly = {"a": stats["a"], "b": bandit.ArmStats(stats["b"].alpha, stats["b"].beta, cost_sum=50.0, cost_n=100)}
    assert sum(bandit.choose(costly, ("a", "b"), rng) == "a" for _ in range(200)) > 180


def _discount_contract(store: Any) -> None:
    """With memory 100 the evidence stays near 100, and an arm never picked drifts back to the prior."""
    key, arms = bandit.key_of("mem", None), ("lightweight", "standard")
    store.record_pick(key, arms, "lightweight", "m-0", "mem", now() + 60, 100)
    store.feedback("m-0", False, None, now())  # lightweight lost once, early
    for i in range(1, 600):
        store.record_pick(key, arms, "standard", f"m-{i}", "mem", now() + 60, 100)
        store.feedback(f"m-{i}", True, None, now())
    stats = store.stats(key, arms)
    assert 95 <= stats["standard"].alpha + stats["standard"].beta - 2 <= 101
    assert stats["lightweight"].beta - 1 < 0.01  # its one complaint is all but forgotten


def test_memory_discounts_every_arm_sqlite(tmp_path: Path) -> None:
    _discount_contract(SqliteStore(f"sqlite:{tmp_path / 'm.sqlite3'}"))


def test_memory_discounts_every_arm_redis(redis_url: str) -> None:
    _discount_contract(RedisStore(redis_url))


def _store_contract(store: Any, other: Any) -> None:
    """Outcomes of feedback, and that ``other`` (another process's client) sees the same state."""
    key = bandit.key_of("help", "support")
    later = now() + 60
    arms = ("lightweight", "standard")
    store.record_pick(key, arms, "standard", "r1", "help", later, None)
    store.record_pick(key, arms, "standard", "r2", "help", later, None)
    store.record_pick(key, arms, "lightweight", "r3", "help", now() - 1, None)  # its window already passed
    store.record_pick(key, arms, "lightweight", "r4", "help", later, None)
    assert other.feedback("r1", False, None, now()) == "bad"
    assert store.feedback("r1", True, None, now()) == "repeated"
    assert store.feedback("nope", True, None, now()) == "unknown"
    assert store.feedback("r2", True, "other-route", now()) == "wrong_route"
    assert store.feedback("r2", True, "help", now()) == "good"
    assert store.feedback("r3", False, None, now()) == "expired"  # the silence stood: counted good
    assert other.settle_silent(now()) == 0
    store.add_cost(key, "standard", 0.25)
    stats = other.stats(key, ("lightweight", "standard"))
    assert (stats["standard"].alpha, stats["standard"].beta, stats["standard"].picks) == (2.0, 2.0, 2)
    assert (stats["lightweight"].alpha, stats["lightweight"].beta) == (2.0, 1.0)
    assert stats["standard"].mean_cost == 0.25


def test_sqlite_store_outcomes_and_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'bandit.sqlite3'}"
    first, second = SqliteStore(url), SqliteStore(url)
    _store_contract(first, second)
    first.close()
    second.close()
    restarted = SqliteStore(url)  # a new process on the same file
    stats = restarted.stats(bandit.key_of("help", "support"), ("lightweight", "standard"))
    assert stats["standard"].alpha == 2.0 and stats["standard"].beta == 2.0
    assert restarted.feedback("r4", True, None, now()) == "good"


def test_redis_store_is_shared_by_two_clients(redis_url: str) -> None:
    a, b = RedisStore(redis_url), RedisStore(redis_url)
    try:
        _store_contract(a, b)
    finally:
        a.close()
        b.close()


def test_a_store_that_is_down_falls_back_to_the_first_arm() -> None:
    cfg = _config(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    route = cfg.decisions[0].route
    assert route is not None
    bandits = Bandits()
    chosen, choice = asyncio.run(choose_arm(bandits, route, "help", None, "req-1"))
    assert chosen.mode == "lightweight" and choice.fallback == STORE_DOWN and choice.header == f"fallback:{STORE_DOWN}"
    asyncio.run(record_cost(bandits, route, choice, 0.1, 0))  # nothing to record, nothing raised
    # The next request does not wait on the connection timeout again: the store is skipped a while.
    started = time.monotonic()
    assert asyncio.run(choose_arm(bandits, route, "help", None, "req-2"))[1].fallback == STORE_DOWN
    assert time.monotonic() - started < 0.3


def test_choose_arm_records_the_pick_for_feedback(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'b.sqlite3'}"
    cfg = _config(url)
    route = cfg.decisions[0].route
    assert route is not None
    bandits = Bandits(seed=1)
    chosen, choice = asyncio.run(choose_arm(bandits, route, "help", "support", "req-9"))
    assert chosen.mode == choice.arm and chosen.options is route.options.arm_options[choice.arm]
    assert choice.header == "chosen" and set(choice.means) == {"lightweight", "standard"}
    assert bandits.store(url).feedback("req-9", False, None, now()) == "bad"


def _post(app: Any, body: bytes, peer: str = "127.0.0.1", auth: str | None = None) -> tuple[str, dict[str, Any]]:
    seen: list[str] = []
    environ = {"PATH_INFO": "/v1/feedback", "REQUEST_METHOD": "POST", "CONTENT_LENGTH": str(len(body)),
               "wsgi.input": BytesIO(body), "REMOTE_ADDR": peer}
    if auth is not None:
        environ["HTTP_AUTHORIZATION"] = auth
    out = b"".join(app(environ, lambda status, headers: seen.append(status)))
    return seen[0], json.loads(out)


def test_the_feedback_endpoint(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'f.sqlite3'}"
    cfg = _config(url)
    bandits = Bandits()
    registry = CollectorRegistry()
    telemetry = Telemetry(registry=registry)
    bandits.store(url).record_pick(bandit.key_of("help", None), ("lightweight", "standard"), "standard", "req-1",
                                   "help", now() + 60, None)
    app = probe_app(registry, None, None, FeedbackHandler(lambda: cfg, bandits, telemetry, token="s3cret"))
    good = json.dumps({"request_id": "req-1", "good": True}).encode()
    assert _post(app, good, peer="10.0.0.5")[0].startswith("403")  # not this host, no token
    assert _post(app, good, peer="10.0.0.5", auth="Bearer wrong")[0].startswith("403")
    assert _post(app, good, peer="10.0.0.5", auth="Bearer s3cret") == ("200 OK", {"request_id": "req-1",
                                                                                "outcome": "good"})
    assert _post(app, good)[1]["outcome"] == "repeated"
    assert _post(app, b'{"request_id": "zzz", "good": false}')[0].startswith("404")
    assert _post(app, b'{"request_id": "req-1"}')[0].startswith("400")
    assert _post(app, b'not json')[0].startswith("400")
    assert _post(app, b'{"request_id": "x", "good": true, "extra": 1}')[1]["error"].startswith("unknown field")
    assert registry.get_sample_value("truthlens_feedback_total", {"outcome": "good"}) == 1.0
    assert registry.get_sample_value("truthlens_feedback_total", {"outcome": "repeated"}) == 1.0
    down = _config(f"redis://127.0.0.1:{free_port()}/0")
    app_down = probe_app(registry, None, None, FeedbackHandler(lambda: down, Bandits(), telemetry))
    assert _post(app_down, good)[0].startswith("503")
    assert _post(probe_app(registry, None, None, None), good)[0].startswith("501")
