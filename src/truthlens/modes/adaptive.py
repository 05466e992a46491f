"""``mode: adaptive`` — the route's modes as arms of a bandit, chosen per request from feedback.

Its options name the arms (``arms: [lightweight, standard, premium]``, each arm's own options
under its name, as in ``mode: auto``), the store of the posteriors, the feedback window after
which silence counts as good, the prices that make a slow or costly arm pay, and ``memory``.
The gateway's policy layer chooses the arm (:mod:`truthlens.gateway.policy.adaptive.choice`) and runs
that arm's mode with that arm's options; this module validates the options and, for a caller that
runs the mode without a choice, runs the first arm (composition: each arm is the real mode,
loaded through the registry).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from truthlens.modes import registry
from truthlens.modes.base import Exchange, Services, Verdict
from truthlens.options import ConfigError, OptionContext, Section

NAME = "adaptive"
REWRITES = True  # an arm may rewrite (standard, premium): the answer is held for the verdict
DEFAULT_STORE = "sqlite:truthlens-adaptive.sqlite3"
ARM_MODES = ("lightweight", "standard", "premium", "acr", "auto")


@dataclass(frozen=True, slots=True)
class AdaptiveOptions:
    arms: tuple[str, ...]
    arm_options: Mapping[str, Any]  # each arm's options, parsed by its mode
    store: str = DEFAULT_STORE  # sqlite:PATH (relative: the working directory) or redis://host:port/db
    feedback_window_s: float = 3600.0  # after it, a request without feedback counts as good
    price_per_second: float = 0.0  # cost of one second of checking, in units of one unhappy user
    price_per_model_call: float = 0.0  # cost of one model call (re-ask), same units
    memory: int | None = None  # outcomes an arm's posterior keeps (None: all)


def parse_options(raw: Mapping[str, Any], ctx: OptionContext) -> AdaptiveOptions:
    s = Section(raw, ctx.path)
    s.allow("arms", "store", "feedback_window_s", "price_per_second", "price_per_model_call", "memory", *ARM_MODES)
    listed = s.get("arms", ["lightweight", "standard"], schema={
        "type": "array", "minItems": 2, "uniqueItems": True, "items": {"enum": list(ARM_MODES)},
        "default": ["lightweight", "standard"]})
    if not isinstance(listed, list):
        raise ConfigError(s.key("arms"), f"must be a list of modes ({', '.join(ARM_MODES)})")
    arms = tuple(listed)
    if len(arms) < 2 or len(set(arms)) != len(arms):
        raise ConfigError(s.key("arms"), "needs two or more different modes")
    for i, arm in enumerate(arms):
        if arm not in ARM_MODES:
            raise ConfigError(f"{s.key('arms')}[{i}]",
                              f"unknown arm {arm!r} (expected modes of {', '.join(ARM_MODES)})")
    for name in ARM_MODES:
        if name in s and name not in arms:
            raise ConfigError(s.key(name), f"options of {name!r}, which is not one of the arms")
    arm_options = {arm: registry.load_mode_module(arm).parse_options(
        s.section(arm).raw, OptionContext(path=s.key(arm), models=ctx.models)) for arm in arms}
    store = s.string("store", DEFAULT_STORE)
    if not store.startswith(("sqlite:", "redis://", "rediss://", "unix://")):
        raise ConfigError(s.key("store"), f"must be sqlite:PATH or redis://host:port/db, got {store!r}")
    memory = s.optional_integer("memory", lo=10)
    return AdaptiveOptions(
        arms=arms,
        arm_options=arm_options,
        store=store,
        feedback_window_s=s.number("feedback_window_s", 3600.0, positive=True),
        price_per_second=s.number("price_per_second", 0.0, lo=0.0),
        price_per_model_call=s.number("price_per_model_call", 0.0, lo=0.0),
        memory=memory,
    )


def build() -> AdaptiveMode:
    return AdaptiveMode()


class AdaptiveMode:
    name = NAME

    async def run(self, exchange: Exchange, services: Services) -> Verdict:
        """Run without the gateway's choice: the first arm (the route's fallback)."""
        opts = exchange.options_as(AdaptiveOptions)
        arm = opts.arms[0]
        inner = dataclasses.replace(exchange, mode=arm, options=opts.arm_options[arm])
        verdict = await registry.load_mode_module(arm).build().run(inner, services)
        return dataclasses.replace(verdict, attributes={**verdict.attributes, "arm": arm, "arm_chosen_by": "first"})
