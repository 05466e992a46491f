"""Added latency of the standard and premium modes over lightweight, side by side, in one run.

Every LLM call (the primary answer, refine rounds, verifiers, the judge) is answered by the
scripted upstream after a fixed simulated generation time (``--gen-s``), so the numbers show
what each mode costs in model calls and detector work on top of one generation. The detector
is real (the shipped model, or ``--model-dir``). Two scenarios: the primary answer is
hallucinated (the modes act) or grounded (they only check).

    python -m bench.modes_latency [--gen-s 0.3] [--reps 5] [--model-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass
from typing import Any

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import DetectorSettings
from truthlens.llm import ChatCall, Endpoint, LLMClient
from truthlens.modes.base import Exchange, GroundedQuery, Services
from truthlens.modes.prompts import REFINE_MARKER
from truthlens.modes.registry import load_mode_module
from truthlens.options import OptionContext
from truthlens.testing.upstream import ScriptedUpstream

CONTEXT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It was designed by the company of Gustave Eiffel and completed in 1889 for the World's Fair. "
    "The tower is 330 metres tall and was the tallest man-made structure until 1930.",
)
QUESTION = "When was the Eiffel Tower completed, how tall is it and where is it?"
GROUNDED = "The Eiffel Tower is in Paris. It was completed in 1889. It is 330 metres tall."
HALLUCINATED = "The Eiffel Tower is in Lyon. It was completed in 1925. It is 330 metres tall."
MODELS = frozenset({"default", "verifier-a", "verifier-b", "judge"})


@dataclass(frozen=True, slots=True)
class Case:
    label: str
    mode: str
    options: dict[str, Any]


CASES = (
    Case("lightweight", "lightweight", {}),
    Case("standard", "standard", {"max_iterations": 3}),
    Case("premium (2 verifiers)", "premium", {"verification_models": ["verifier-a", "verifier-b"]}),
    Case("premium + judge", "premium", {"verification_models": ["verifier-a", "verifier-b"], "judge_model": "judge"}),
)


def script(primary: str, gen_s: float) -> list[dict[str, Any]]:
    slow = {"delay_s": gen_s}
    return [
        {"match": {"any": REFINE_MARKER}, "reply": {"content": GROUNDED, **slow}},
        {"match": {"model": "verifier-a"}, "reply": {"content": GROUNDED, **slow}},
        {"match": {"model": "verifier-b"}, "reply": {"content": GROUNDED.replace("is in", "stands in"), **slow}},
        {"match": {"model": "judge"}, "reply": {"content": GROUNDED, **slow}},
        {"match": {"model": "primary"}, "reply": {"content": primary, **slow}},
    ]


async def one_exchange(case: Case, options: Any, services: Services, llm: LLMClient) -> float:
    messages = ({"role": "user", "content": QUESTION},)
    start = time.monotonic()
    first = await llm.chat(ChatCall(model="primary", messages=messages, role="primary"))
    exchange = Exchange(
        decision="bench", mode=case.mode, threshold=0.5, options=options,
        query=GroundedQuery(model="primary", question=QUESTION, passages=CONTEXT, messages=messages),
        answers=tuple(c.text for c in first.choices), deadline=time.monotonic() + 60.0,
    )
    await load_mode_module(case.mode).build().run(exchange, services)
    return time.monotonic() - start


async def main(gen_s: float, reps: int, model_dir: str | None) -> None:
    detector = create_detector(DetectorSettings(model_dir=model_dir, intra_op_threads=1))
    async with ScriptedUpstream() as up:
        llm = LLMClient({"default": Endpoint(base_url=up.base_url)})
        services = Services(detector=detector, llm=llm)
        rows = []
        for scenario, primary in (("hallucinated", HALLUCINATED), ("grounded", GROUNDED)):
            for case in CASES:
                module = load_mode_module(case.mode)
                options = module.parse_options(case.options, OptionContext(path="bench", models=MODELS))
                up.set_rules(script(primary, gen_s))
                await one_exchange(case, options, services, llm)  # warm-up (sessions, ORT arenas)
                up.reset()
                times = [await one_exchange(case, options, services, llm) for _ in range(reps)]
                rows.append((scenario, case.label, statistics.median(times), len(up.calls) / reps))
        await llm.aclose()
    await detector.close()
    print(f"simulated generation time per LLM call: {gen_s * 1000:.0f} ms; {reps} exchanges per row (median)")
    print(f"{'scenario':<13}{'mode':<24}{'total ms':>10}{'added ms':>10}{'x lightweight total':>21}"
          f"{'x lightweight added':>21}{'LLM calls':>11}")
    base = {s: (t, t - gen_s) for s, label, t, _ in rows if label == "lightweight"}
    for scenario, label, total, calls in rows:
        b_total, b_added = base[scenario]
        added = total - gen_s
        print(f"{scenario:<13}{label:<24}{total * 1000:>10.0f}{added * 1000:>10.0f}{total / b_total:>21.2f}"
              f"{added / b_added:>21.2f}{calls:>11.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gen-s", type=float, default=0.3, help="simulated generation time of every LLM call")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--model-dir", default=None, help="detector model directory (default: the shipped model)")
    args = parser.parse_args()
    asyncio.run(main(args.gen_s, args.reps, args.model_dir))
