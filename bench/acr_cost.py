"""Upstream calls and added latency per exchange: ACR vs standard vs lightweight.

The upstream is the scripted OpenAI-compatible server with a simulated generation delay per
call (``--gen-delay``); the detector, embedder and LLM client are the real ones. Every mode
checks the same grounded exchange (context says 1911, the model's memory 1950); the table
gives calls, wall time added by the mode, and both as a ratio to standard, in one run.

    python -m bench.acr_cost [--gen-delay 0.3] [--repeats 3] [--model-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import DetectorSettings
from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.llm import Endpoint, LLMClient
from truthlens.modes import registry
from truthlens.modes.base import Exchange, GroundedQuery, Services
from truthlens.options import OptionContext
from truthlens.testing.upstream import ScriptedUpstream

QUESTION = "When was the museum founded?"
PASSAGE = ("The city museum opens at 9 am on weekdays and closes at 5 pm. Entry costs 12 euros for adults. "
           "The museum was founded by Anna Berg in 1911.")
ANSWER = "The museum was founded in 1950."
GROUNDED = "The museum was founded by Anna Berg in 1911."


def _rules(delay: float, agree: bool) -> list[dict[str, Any]]:
    external = "1950" if agree else "1911"

    def tag(t: str, **reply: Any) -> dict[str, Any]:
        return {"name": t, "match": {"system_regex": rf"^\[acr:{t}"}, "reply": {"delay_s": delay, **reply}}

    return [
        tag("internal-", content="Answer: 1950", confidence=0.9),
        tag("extract-triples", content=f"<s>museum | founded in | {external}</s>"),
        tag("verify-triples", content="1: yes"),
        tag("external-answer", content=f"Answer: {external}", confidence=0.6),
        tag("perturb", content="negation: a\nentity_swap: b\ntime_shift: c"),
        tag("counterfactual-answer", content="Answer: 1950"),
        tag("fuse", content=ANSWER),
        # standard's refine call (any other prompt)
        {"name": "refine", "reply": {"content": GROUNDED, "delay_s": delay}},
    ]


async def _measure(mode: str, raw_options: dict[str, Any], services: Services, upstream: ScriptedUpstream,
                   rules: list[dict[str, Any]], repeats: int) -> tuple[float, float, str]:
    module = registry.load_mode_module(mode)
    options = module.parse_options(raw_options, OptionContext(path="bench", models=frozenset({"default"})))
    times, calls, status = [], [], ""
    for _ in range(repeats):
        upstream.set_rules(rules)
        query = GroundedQuery(model="chat", question=QUESTION, passages=(PASSAGE,),
                              messages=({"role": "system", "content": PASSAGE}, {"role": "user", "content": QUESTION}))
        exchange = Exchange(decision="bench", mode=mode, threshold=0.5, options=options, query=query,
                            answers=(ANSWER,), deadline=time.monotonic() + 120)
        start = time.perf_counter()
        verdict = await module.build().run(exchange, services)
        times.append(time.perf_counter() - start)
        calls.append(len(upstream.calls))
        status = f"{verdict.status}" + (f", source {verdict.headers.get('x-truthlens-acr-source')}"
                                        if "x-truthlens-acr-source" in verdict.headers else "")
    return statistics.median(times), statistics.median(calls), status


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gen-delay", type=float, default=0.3, help="seconds per scripted generation")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-dir", default=None, help="detector model directory (default: shipped)")
    args = parser.parse_args()
    detector = create_detector(DetectorSettings(model_dir=args.model_dir))
    embedder = OnnxEmbedder.load()
    async with ScriptedUpstream(port=0) as upstream:
        llm = LLMClient({"default": Endpoint(base_url=upstream.base_url, timeout_s=60, max_retries=0)})
        services = Services(detector=detector, llm=llm, embedder=embedder)
        cases = [
            ("lightweight", "lightweight", {}, _rules(args.gen_delay, agree=False)),
            ("standard (1 round)", "standard", {"max_iterations": 1}, _rules(args.gen_delay, agree=False)),
            ("acr, sources agree", "acr", {}, _rules(args.gen_delay, agree=True)),
            ("acr, conflict", "acr", {"max_rounds": 1}, _rules(args.gen_delay, agree=False)),
            ("acr, conflict M=2", "acr", {"max_rounds": 1, "samples": 2}, _rules(args.gen_delay, agree=False)),
        ]
        rows = []
        for label, mode, raw, rules in cases:
            rows.append((label, *await _measure(mode, raw, services, upstream, rules, args.repeats)))
        await llm.aclose()
    await detector.close()
    embedder.close()
    base_s, base_calls = next((s, c) for label, s, c, _ in rows if label.startswith("standard"))
    if base_calls == 0:
        raise SystemExit("the detector did not flag the benchmark answer: standard made no call to compare with")
    print(f"simulated generation {args.gen_delay:.2f} s per upstream call; median of {args.repeats}")
    print(f"{'mode':<22}{'calls':>6}{'added s':>9}{'calls/std':>11}{'time/std':>10}  verdict")
    for label, secs, calls, status in rows:
        print(f"{label:<22}{calls:>6.0f}{secs:>9.3f}{calls / base_calls:>11.1f}{secs / base_s:>10.1f}  {status}")


if __name__ == "__main__":
    asyncio.run(main())
