"""An adaptive route's arm for one exchange, and what the exchange taught it.

:func:`choose_arm` settles the requests whose feedback window passed in silence (good), reads
the posteriors of (decision, domain), draws an arm (:func:`truthlens.gateway.policy.bandit.choose`)
and records the pick under the exchange's request id, so ``POST /v1/feedback`` can reward it.
The store's calls block, so they run in a worker thread. A store that is down never stops an
answer: the route's first arm runs, and the fallback is said (``x-truthlens-adaptive``,
the audit line, ``truthlens_errors_total{reason="adaptive_store_unavailable"}``).
:func:`record_cost` adds the measured cost of the arm that ran.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from truthlens.gateway.policy.adaptive import bandit
from truthlens.gateway.policy.adaptive.store import BanditStore, StoreUnavailable, now, open_store
from truthlens.modes.adaptive import AdaptiveOptions

if TYPE_CHECKING:
    from truthlens.gateway.policy.config import RouteSettings

log = logging.getLogger(__name__)
ADAPTIVE_HEADER = "x-truthlens-adaptive"  # "chosen" or "fallback:<reason>"
STORE_DOWN = "adaptive_store_unavailable"
RETRY_AFTER_S = 5.0  # a store that failed is not asked again for this long: no request waits on its timeout


class Bandits:
    """The stores this process has opened, one per URL, shared by every exchange and the
    feedback endpoint; the random source of the draws."""

    def __init__(self, seed: int | None = None) -> None:
        self._stores: dict[str, BanditStore] = {}
        self._lock = threading.Lock()
        self._down_until: dict[str, float] = {}
        self.rng = random.Random(seed)

    def failed(self, url: str) -> None:
        """The store at ``url`` just failed: exchanges skip it for :data:`RETRY_AFTER_S`."""
        self._down_until[url] = time.monotonic() + RETRY_AFTER_S

    def store(self, url: str) -> BanditStore:
        """The open store at ``url`` (opened on first use); raises :class:`StoreUnavailable`,
        at once while a recent failure's back-off lasts."""
        if time.monotonic() < self._down_until.get(url, 0.0):
            raise StoreUnavailable(f"{url}: failed less than {RETRY_AFTER_S:g} s ago")
        with self._lock:
            found = self._stores.get(url)
            if found is None:
                try:
                    found = self._stores[url] = open_store(url)
                except StoreUnavailable:
                    raise
                except Exception as exc:  # a file that cannot be created, a bad URL, a missing client
                    raise StoreUnavailable(f"{url}: {exc}") from None
            return found

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()


@dataclass(frozen=True, slots=True)
class ArmChoice:
    arm: str
    key: str
    store: str
    fallback: str | None = None  # why the first arm runs without a draw (the store is down)
    means: dict[str, float] = field(default_factory=dict)

    @property
    def header(self) -> str:
        return "chosen" if self.fallback is None else f"fallback:{self.fallback}"


async def choose_arm(bandits: Bandits, route: RouteSettings, decision: str, domain: str | None,
                     request_id: str | None) -> tuple[RouteSettings, ArmChoice]:
    """The route to run (the chosen arm's mode and options in place of ``adaptive``) and the choice."""
    opts = route.options
    assert isinstance(opts, AdaptiveOptions)
    key = bandit.key_of(decision, domain)

    def draw() -> ArmChoice:
        store = bandits.store(opts.store)
        store.settle_silent(now())
        stats = store.stats(key, opts.arms)
        arm = bandit.choose(stats, opts.arms, bandits.rng)
        if request_id:  # no id, no feedback: the pick is still counted, never rewarded
            store.record_pick(key, opts.arms, arm, request_id, decision, now() + opts.feedback_window_s,
                              opts.memory)
        return ArmChoice(arm, key, opts.store, means={a: s.mean for a, s in stats.items()})

    try:
        choice = await asyncio.to_thread(draw)
    except StoreUnavailable as exc:
        bandits.failed(opts.store)
        log.warning("adaptive route %s: the store is unavailable (%s); running its first arm %s",
                    decision, exc, opts.arms[0])
        choice = ArmChoice(opts.arms[0], key, opts.store, fallback=STORE_DOWN)
    return replace(route, mode=choice.arm, options=opts.arm_options[choice.arm]), choice


async def record_cost(bandits: Bandits, route: RouteSettings, choice: ArmChoice, latency_s: float,
                      model_calls: int) -> None:
    """Add the arm's measured cost (nothing when the store was down for the choice)."""
    opts = route.options
    if choice.fallback is not None or not isinstance(opts, AdaptiveOptions):
        return
    cost = bandit.cost(latency_s, model_calls, opts.price_per_second, opts.price_per_model_call)
    try:
        await asyncio.to_thread(lambda: bandits.store(choice.store).add_cost(choice.key, choice.arm, cost))
    except StoreUnavailable as exc:
        log.warning("adaptive route: the cost of arm %s was not recorded (%s)", choice.arm, exc)
