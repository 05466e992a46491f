"""mode: adaptive in simulation: regret, time to converge and recovery, on the real stores.

Simulated users: each arm (mode) has a known satisfaction (the chance that a user does not
complain) and a known cost (latency and model calls, priced as a route would price them). Each
request goes through the gateway's own code: the store's sweep, posteriors and pick
(:func:`truthlens.gateway.policy.bandit.choose`), the user's feedback (``store.feedback``: good or
bad, as POST /v1/feedback records it) and the measured cost (``store.add_cost``).

Regret: the expected utility (satisfaction − cost) of the best fixed mode, less that of the arm
chosen, summed over the requests. Convergence: the first request after which the best arm holds
≥ 80% of every later window of 200 picks. Recovery: the same, counted from the request at which
the best arm changes (the ``shift`` scenario: halfway, lightweight becomes the best).

    python -m bench.bandit [--requests 10000] [--redis]   # --redis: also one and two processes on redis-server
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from truthlens.gateway.policy.adaptive import bandit
from truthlens.gateway.policy.adaptive.store import BanditStore, now, open_store

ARMS = ("lightweight", "standard", "premium")
PRICE_PER_SECOND, PRICE_PER_CALL = 0.02, 0.01
COST = {"lightweight": (0.03, 0), "standard": (0.4, 1), "premium": (2.0, 3)}  # latency s, model calls
BEFORE = {"lightweight": 0.70, "standard": 0.86, "premium": 0.88}
AFTER = {"lightweight": 0.95, "standard": 0.86, "premium": 0.88}  # the shift: the upstream model improved
WINDOW = 200


def utility(arm: str, satisfaction: dict[str, float]) -> float:
    latency, calls = COST[arm]
    return satisfaction[arm] - bandit.cost(latency, calls, PRICE_PER_SECOND, PRICE_PER_CALL)


@dataclass
class Run:
    picks: list[str]
    seconds: float


def simulate(url: str, n: int, shift: bool, memory: int | None, seed: int, key: str) -> Run:
    store: BanditStore = open_store(url)
    rng = random.Random(seed)
    picks = []
    start = time.perf_counter()
    for i in range(n):
        truth = AFTER if shift and i >= n // 2 else BEFORE
        store.settle_silent(now())
        arm = bandit.choose(store.stats(key, ARMS), ARMS, rng)
        rid = f"{key}-{seed}-{i}"
        store.record_pick(key, ARMS, arm, rid, "sim", now() + 3600, memory)
        store.feedback(rid, rng.random() < truth[arm], "sim", now())
        latency, calls = COST[arm]
        store.add_cost(key, arm, bandit.cost(latency, calls, PRICE_PER_SECOND, PRICE_PER_CALL))
        picks.append(arm)
    store.close()
    return Run(picks, time.perf_counter() - start)


def _worker(args: tuple[str, int, bool, int | None, int, str]) -> list[str]:
    return simulate(*args).picks


def settled_from(picks: list[str], best: str, start: int) -> int | None:
    """Requests from ``start`` until the best arm holds ≥ 80% of every later window (None: never)."""
    ok_from = None
    for i in range(start, len(picks) - WINDOW + 1, 10):
        share = picks[i:i + WINDOW].count(best) / WINDOW
        if share >= 0.8:
            ok_from = i if ok_from is None else ok_from
        else:
            ok_from = None
    return None if ok_from is None else ok_from - start


def report(name: str, picks: list[str], shift: bool, seconds: float) -> str:
    n = len(picks)
    truths = [AFTER if shift and i >= n // 2 else BEFORE for i in range(n)]
    fixed = {arm: sum(utility(arm, t) for t in truths) for arm in ARMS}
    best_fixed = max(fixed, key=lambda a: fixed[a])
    got = sum(utility(arm, t) for arm, t in zip(picks, truths, strict=True))
    oracle = sum(max(utility(a, t) for a in ARMS) for t in truths)
    best_before = max(ARMS, key=lambda a: utility(a, BEFORE))
    converge = settled_from(picks[: n // 2] if shift else picks, best_before, 0)
    recovery = settled_from(picks, max(ARMS, key=lambda a: utility(a, AFTER)), n // 2) if shift else None
    share = {a: picks.count(a) / n for a in ARMS}
    recovered = "" if not shift else ("never" if recovery is None else recovery)
    return (f"| {name} | {n} | {fixed[best_fixed] - got:.1f} ({best_fixed}) | {oracle - got:.1f} | "
            f"{'—' if converge is None else converge} | {recovered} | "
            + " / ".join(f"{share[a]:.2f}" for a in ARMS) + f" | {seconds / n * 1000:.2f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=10_000)
    p.add_argument("--redis", action="store_true", help="also run on a redis-server (started here)")
    a = p.parse_args()
    print("utility per request (satisfaction − cost): before " +
          ", ".join(f"{arm} {utility(arm, BEFORE):.3f}" for arm in ARMS) + "; after the shift " +
          ", ".join(f"{arm} {utility(arm, AFTER):.3f}" for arm in ARMS))
    print("\n| run | requests | regret vs best fixed mode | regret vs best arm at each time | converged after "
          "| recovered after | picks light / std / premium | store ms per request |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:{Path(tmp) / 'bandit.sqlite3'}"
        for name, shift, memory in [("SQLite, one process, stationary", False, None),
                                    ("SQLite, one process, shift, no memory", True, None),
                                    ("SQLite, one process, shift, memory 1000", True, 1000)]:
            run = simulate(url, a.requests, shift, memory, seed=1, key=name)
            print(report(name, run.picks, shift, run.seconds))
        if a.redis:
            from tests.policy.redis_server import redis_server

            with redis_server(Path(tmp)) as redis_url:
                run = simulate(redis_url, a.requests, True, 1000, seed=2, key="redis-one")
                print(report("Redis, one process, shift, memory 1000", run.picks, True, run.seconds))
                start = time.perf_counter()
                with multiprocessing.get_context("spawn").Pool(2) as pool:
                    halves = pool.map(_worker, [(redis_url, a.requests // 2, True, 1000, s, "redis-two")
                                                for s in (3, 4)])
                seconds = time.perf_counter() - start
                # Interleaved as the store saw them (each process's k-th request at about the same time).
                picks = [arm for pair in zip(*halves, strict=True) for arm in pair]
                print(report("Redis, two processes, one posterior, shift, memory 1000", picks, True, seconds))


if __name__ == "__main__":
    main()
