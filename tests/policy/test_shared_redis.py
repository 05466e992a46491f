"""Two processes on one redis-server share one posterior: every pick and every feedback of
both is counted once (a real redis-server; the processes are real, started with spawn)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from truthlens.gateway.policy.adaptive import bandit
from truthlens.gateway.policy.adaptive.store import RedisStore, now

from .redis_server import redis_server

KEY = bandit.key_of("help", "support")
ARMS = ("lightweight", "standard")


def _serve(url: str, worker: int, n: int) -> None:
    store = RedisStore(url)
    for i in range(n):
        arm = ARMS[i % 2]
        rid = f"w{worker}-{i}"
        store.record_pick(KEY, ARMS, arm, rid, "help", now() + 60, None)
        # Each process answers the other's ids too: only the first answer counts.
        store.feedback(rid, arm == "standard", None, now())
        store.feedback(f"w{1 - worker}-{i}", True, None, now())
    store.close()


def test_two_processes_share_one_posterior(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        ctx = multiprocessing.get_context("spawn")
        procs = [ctx.Process(target=_serve, args=(url, w, 40)) for w in (0, 1)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
            assert p.exitcode == 0
        stats = RedisStore(url).stats(KEY, ARMS)
    assert stats["lightweight"].picks + stats["standard"].picks == 80
    for arm in ARMS:  # every id settled exactly once: α + β − 2 is its picks
        assert stats[arm].alpha + stats[arm].beta - 2 == stats[arm].picks
    # Standard's own answers were good; a lightweight id answered first by the other process was good too.
    assert stats["standard"].beta == 1.0
