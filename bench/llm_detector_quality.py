"""Detection quality of a generative span detector on a real model server, beside the encoder
and the cascade, on the same answers in one run.

The quality recipe of docs/benchmarks.md ("Measuring a generative detector's quality with
a real model server"): serve a generative span detector behind any OpenAI-compatible endpoint with
structured outputs (vLLM, for instance), point this at it, and compare, per data set, three
configurations as the gateway runs them:

- ``encoder``: the shipped model in process (``detector.backend: onnx``);
- ``llm``: the served model alone (``detector.backend: llm``: one strict-schema call per answer);
- ``cascade``: the encoder, then the served model on the answers it flags (``detector.confirm``).

Data: RAGTruth's evaluation half (per task and pooled; human span labels) and HaluEval's
evaluation fold, loaded as ``bench/detector_quality.py`` loads them. Per configuration and set:
example F1, balanced accuracy, character-span F1 (RAGTruth), faithful answers flagged, checks
that were unavailable (counted as not flagged: the gateway would not warn them), and p50
latency; for the cascade, how many flagged answers the model confirmed, cleared or could not
judge. Numbers come only from a run against a real model: the scripted upstream's span judge
(``truthlens upstream``) answers this protocol too, but it is a rule, so a run against it checks
the plumbing, not quality.

    python -m bench.llm_detector_quality --base-url http://127.0.0.1:8001/v1 --model span-detector \\
        [--configs encoder llm cascade] [--items 100] [--summarization-items 50] [--limit 0] \\
        [--concurrency 8] [--timeout-s 120] [--api-key-env VAR]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.detector_quality import describe, evaluation_sets, print_table
from training.corpus import halueval, ragtruth
from training.scoring import Case, Metrics, verdict_metrics
from truthlens.detector.backends.cascade import CascadeDetector
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.types import Detection, Detector, DetectorError, DetectorSettings, LlmSettings
from truthlens.llm import Endpoint

CONFIGS = ("encoder", "llm", "cascade")


async def judge_all(detector: Detector, cases: Sequence[Case], concurrency: int, timeout_s: float,
                    threshold: float) -> tuple[list[Detection], list[float]]:
    """Each case's detection (over a backend's size limits: unavailable) and its latency (ms)."""
    gate = asyncio.Semaphore(concurrency)
    latencies = [0.0] * len(cases)

    async def one(i: int, case: Case) -> Detection:
        async with gate:
            started = time.perf_counter()
            try:
                return await detector.detect(case.item, threshold=threshold, timeout_s=timeout_s)
            except DetectorError as exc:
                return Detection.unavailable(exc.reason)
            finally:
                latencies[i] = (time.perf_counter() - started) * 1000.0

    found = await asyncio.gather(*(one(i, c) for i, c in enumerate(cases)))
    return list(found), latencies


def build(name: str, args: argparse.Namespace) -> tuple[Detector, list[Detector]]:
    """The configuration's detector and everything to close after it."""
    def generative(role: str) -> Detector:
        endpoint = Endpoint(base_url=args.base_url, api_key_env=args.api_key_env, timeout_s=args.timeout_s,
                            max_retries=1, served_model=args.served_model)
        return create_detector(DetectorSettings(
            backend="llm", max_in_flight=args.concurrency, max_answer_chars=args.max_answer_chars,
            max_context_chars=args.max_context_chars,
            llm=LlmSettings(args.model, endpoint, role=role, max_tokens=args.max_tokens)))

    if name == "llm":
        model = generative("detect")
        return model, [model]
    encoder = create_detector(DetectorSettings(provider=args.provider))
    if name == "encoder":
        return encoder, [encoder]
    confirmer = generative("confirm")
    return CascadeDetector(encoder, confirmer), [confirmer, encoder]


async def evaluate(name: str, data: dict[str, list[Case]], args: argparse.Namespace
                   ) -> tuple[dict[str, Metrics], dict[str, str]]:
    detector, owned = build(name, args)
    results: dict[str, Metrics] = {}
    extra: dict[str, str] = {}
    outcomes: Counter[str] = Counter()
    pooled: list[tuple[Case, Detection]] = []
    started = time.perf_counter()
    all_latencies: list[float] = []
    try:
        for set_name, cases in data.items():
            found, latencies = await judge_all(detector, cases, args.concurrency, args.timeout_s, args.threshold)
            all_latencies += latencies
            results[set_name] = metrics_of(cases, found)
            extra[f"{set_name} unavail"] = str(sum(d.status == "unavailable" for d in found))
            outcomes.update(d.reason for d in found if d.reason and (d.reason.endswith("_llm")
                                                                      or d.reason.startswith("confirm_")))
            if set_name.startswith("ragtruth "):
                pooled += zip(cases, found, strict=True)
    finally:
        for d in owned:
            await d.close()
    results["ragtruth all"] = metrics_of([c for c, _ in pooled], [d for _, d in pooled])
    extra["p50 ms"] = f"{statistics.median(all_latencies):.0f}" if all_latencies else "-"
    extra["s"] = f"{time.perf_counter() - started:.0f}"
    if name == "cascade":
        extra["confirm"] = " ".join(f"{k}:{v}" for k, v in sorted(outcomes.items())) or "-"
    return results, extra


def metrics_of(cases: Sequence[Case], found: Sequence[Detection]) -> Metrics:
    return verdict_metrics(cases, [(d.status == "detected", d.spans) for d in found],
                           [d.score if d.score is not None else 0.0 for d in found])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.llm_detector_quality", description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True, help="the model server's OpenAI-compatible base URL (…/v1)")
    ap.add_argument("--model", required=True, help="the model's name (as a models: entry would call it)")
    ap.add_argument("--served-model", default=None, help="the name the server knows it by (default: --model)")
    ap.add_argument("--api-key-env", default=None, help="environment variable holding the server's API key")
    ap.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS))
    ap.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR, help="HaluEval (fetched if missing)")
    ap.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR, help="RAGTruth (training/README.md)")
    ap.add_argument("--items", type=int, default=100, help="HaluEval QA and dialogue items (x2 answers each)")
    ap.add_argument("--summarization-items", type=int, default=50, help="HaluEval summarization items (x2)")
    ap.add_argument("--limit", type=int, default=0, help="first N answers of each set only (0: all)")
    ap.add_argument("--concurrency", type=int, default=8, help="checks in flight (and model calls at once)")
    ap.add_argument("--timeout-s", type=float, default=120.0, help="one check's budget (and one call's timeout)")
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--max-answer-chars", type=int, default=50_000)
    ap.add_argument("--max-context-chars", type=int, default=200_000)
    ap.add_argument("--provider", choices=("auto", "cpu", "cuda"), default="auto", help="the encoder's")
    ap.add_argument("--threshold", type=float, default=0.5, help="response score threshold (the routes' default)")
    args = ap.parse_args(argv)
    if not ragtruth.available(args.ragtruth):
        ap.error(f"RAGTruth files not in {args.ragtruth}: python -m training.corpus.ragtruth --faithjudge DIR")
    data = evaluation_sets(args.ragtruth, halueval.fetch(args.halueval), args.items, args.summarization_items)
    if args.limit:
        data = {name: cases[: args.limit] for name, cases in data.items()}
    print(f"answers: {describe(data)}; model {args.model} at {args.base_url}; threshold {args.threshold}\n")
    results = {name: asyncio.run(evaluate(name, data, args)) for name in args.configs}
    label = {name: "encoder (shipped)" if name == "encoder" else f"{name} ({args.model})" for name in results}
    rows: dict[str, dict[str, str]] = {}
    for set_name in (*data, "ragtruth all"):
        for name, (m, extra) in results.items():
            r = m[set_name]
            rows[f"{set_name} · {label[name]}"] = {
                "F1": f"{r.f1:.3f}", "BA": f"{r.balanced_accuracy:.3f}", "FA": f"{r.false_alarms:.3f}",
                "spanF1": "-" if r.span_f1 is None else f"{r.span_f1:.3f}",
                "unavail": extra.get(f"{set_name} unavail", "-"),
            }
    print_table("Example F1, balanced accuracy, faithful answers flagged (FA), character-span F1, unavailable "
                "checks (counted as not flagged)", ["F1", "BA", "FA", "spanF1", "unavail"], rows)
    print_table("Cost and the cascade's confirmations (confirmed_llm / cleared_llm / confirm_<why>)",
                ["p50 ms", "s", "confirm"], {label[name]: extra for name, (_, extra) in results.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
