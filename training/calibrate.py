"""Choose a model's default decision on development data, and write it into its manifest.

The decision is how token probabilities become a verdict: the token threshold, how spans become
the answer's score (``noisy_or`` grows with the number of flagged tokens, so with answer length;
``max_span`` and ``span_mean`` do not) and the shortest span that counts.

Development data only: the RAGTruth dev fold (odd ``source_id`` with ``(source_id // 2) % 5 ==
0``: LLM answers with human labels, :mod:`training.corpus.ragtruth`) and the HaluEval **dev**
fold (line index i % 10 == 1; QA, summarization, dialogue, right and hallucinated answer of each
item). The evaluation folds (RAGTruth even ``source_id``, HaluEval i % 10 == 0) are never read
here; :mod:`bench.detector_quality` reports them. The synthetic held-out split and HaluEval's
full-sentence faithful QA twins are shown, not optimised.

Every answer is scored once the way serving scores it (:mod:`training.scoring`) without the
role check, whose findings are then fused in by rule for the "with role check" variant (the check
is pure text, and fusion is the same noisy-OR serving applies); every candidate decision is
applied to both, so the sweep costs one model pass and also decides whether the role check
earns its false alarms (``calibration.role_checks``): it stays unless it costs more than
:data:`TIE` of mean balanced accuracy, since it catches role swaps the model misses. The chosen
decision maximises the mean balanced accuracy over the six development sets, among token
thresholds below the smallest evidence-check weight (so one unsupported number or name still
flags an answer on its own, :mod:`truthlens.detector.fusion`); decisions within :data:`TIE` of
the best count as tied, and the lowest threshold wins (a missed hallucination costs a user more
than a needless warning), then the shortest minimum span (a longer one drops the span of a
one-word error, and the user is warned with nothing marked).

    python -m training.calibrate --model src/truthlens/detector/default_model --write
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from training.corpus import halueval, ragtruth
from training.corpus.splits import generate
from training.scoring import Case, Decision, Metrics, Scored, halueval_cases, metrics, ragtruth_cases, score_cases
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.facts import role_findings
from truthlens.detector.fusion import REASON_WEIGHTS, fuse
from truthlens.detector.manifest import resolve_model_dir
from truthlens.detector.spans import SpanRules
from truthlens.detector.types import AGGREGATIONS, Aggregation, DetectionInput, DetectorSettings

THRESHOLDS = tuple(round(0.30 + 0.05 * i, 2) for i in range(14))  # 0.30 … 0.95
MIN_SPAN_LENGTHS = (1, 4, 8)
TIE = 0.005  # mean balanced-accuracy differences smaller than this are noise at these set sizes
SHOWN_ONLY = ("synthetic held-out", "qa faithful twins (dev)")


def tuning_sets(
    hal_root: Path, rag_root: Path, items: int, summarization_items: int, heldout: int
) -> dict[str, list[Case]]:
    sets: dict[str, list[Case]] = {}
    for task in ragtruth.TASKS:
        sets[f"ragtruth {task} (dev)"] = ragtruth_cases(task, ("dev",), rag_root)
    for task, n in (("qa", items), ("summarization", summarization_items), ("dialogue", items)):
        sets[f"halueval {task} (dev)"] = halueval_cases(task, ("dev",), hal_root, n)  # type: ignore[arg-type]
    sets["synthetic held-out"] = [
        Case(
            DetectionInput(ex.context, ex.question, ex.answer),
            ex.hallucinated,
            tuple((s.start, s.end) for s in ex.labels),
        )
        for ex in generate("heldout", heldout, seed=13, word_budget=200)
    ]
    twins = []
    for _, row in halueval.items("qa", ("dev",), hal_root):
        twin = halueval.faithful_twin(
            row["hallucinated_answer"], row["right_answer"], (row["knowledge"], row["question"])
        )
        if twin is not None:
            twins.append(Case(DetectionInput((row["knowledge"],), row["question"], twin), False))
        if len(twins) >= items:
            break
    sets["qa faithful twins (dev)"] = twins
    return sets


def candidates(route_threshold: float, below: float) -> list[Decision]:
    aggregations: tuple[Aggregation, ...] = AGGREGATIONS
    return [
        Decision(SpanRules(token_threshold=t, aggregation=a, min_span_length=m), route_threshold)
        for a, t, m in itertools.product(aggregations, THRESHOLDS, MIN_SPAN_LENGTHS)
        if t < below
    ]


Table = dict[Decision, dict[str, Metrics]]


def sweep(scored: dict[str, list[Scored]], decisions: list[Decision]) -> tuple[Decision, Table]:
    """The chosen decision and every candidate's metrics per set."""
    table = {d: {name: metrics(s, d) for name, s in scored.items()} for d in decisions}
    tuned = [name for name in scored if name not in SHOWN_ONLY]

    def objective(d: Decision) -> float:
        return float(np.mean([table[d][name].balanced_accuracy for name in tuned]))

    best = max(objective(d) for d in decisions)
    tied = [d for d in decisions if objective(d) >= best - TIE]
    return min(tied, key=lambda d: (d.rules.token_threshold, d.rules.min_span_length, -objective(d))), table


def with_role_check(scored: list[Scored]) -> list[Scored]:
    """The same answers as if the fact check had also looked for names in another role."""
    out = []
    for s in scored:
        extra = role_findings(s.case.item.answer, s.case.item.context, s.findings, s.case.item.question)
        out.append(replace(s, probs=fuse(s.probs, s.offsets, extra), findings=(*s.findings, *extra)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.calibrate", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--items", type=int, default=300, help="HaluEval dev QA and dialogue items (x2 answers)")
    parser.add_argument("--summarization-items", type=int, default=150)
    parser.add_argument("--heldout", type=int, default=400, help="synthetic held-out examples")
    parser.add_argument("--route-threshold", type=float, default=0.5, help="response-score threshold of the routes")
    parser.add_argument("--no-evidence-checks", action="store_true")
    parser.add_argument("--role-checks", choices=("auto", "on", "off"), default="auto",
                        help="auto: keep the role check unless it costs more than the tie margin; on/off: fixed")
    parser.add_argument("--write", action="store_true", help="record the chosen decision in the model's manifest.json")
    args = parser.parse_args(argv)
    if args.role_checks == "on" and args.no_evidence_checks:
        parser.error("--role-checks on needs the evidence checks: the role check is one of them")

    if not ragtruth.available(args.ragtruth):
        parser.error(f"RAGTruth files not in {args.ragtruth}: run python -m training.corpus.ragtruth --faithjudge DIR")
    sets = tuning_sets(halueval.fetch(args.halueval), args.ragtruth, args.items, args.summarization_items, args.heldout)
    engine = create_detector(
        DetectorSettings(
            model_dir=args.model,
            provider="cpu",
            evidence_checks=not args.no_evidence_checks,
            role_checks=False,  # added by rule below, for the variant that has it
        )
    )
    assert isinstance(engine, DetectorEngine), "calibration scores tokens in process (backend: onnx)"

    async def run() -> dict[str, list[Scored]]:
        try:
            return {name: await score_cases(engine, cases) for name, cases in sets.items()}
        finally:
            await engine.close()

    plain = asyncio.run(run())
    below = min(REASON_WEIGHTS.values()) if not args.no_evidence_checks else 1.0
    variants = {False: plain} if args.no_evidence_checks else {False: plain, True: {
        name: with_role_check(answers) for name, answers in plain.items()
    }}
    swept = {roles: sweep(answers, candidates(args.route_threshold, below)) for roles, answers in variants.items()}
    tuned_sets = [n for n in plain if n not in SHOWN_ONLY]

    def mean_ba(roles: bool) -> float:
        decision, table = swept[roles]
        return float(np.mean([table[decision][n].balanced_accuracy for n in tuned_sets]))

    for roles in swept:
        print(f"role check {'on ' if roles else 'off'}: best mean balanced accuracy {mean_ba(roles):.3f}")
    # Within TIE the role check stays: it catches role swaps the model misses ("Aldrin stayed in
    # orbit"), the errors users meet first; it is dropped only when it measurably costs accuracy.
    role_checks = max(swept, key=lambda r: (mean_ba(r) + (TIE if r else 0.0), r))
    if args.role_checks != "auto":
        role_checks = args.role_checks == "on"
    best, table = swept[role_checks]
    scored = variants[role_checks]
    names = list(scored)
    print("answers: " + ", ".join(f"{n} {len(scored[n])}" for n in names) + f"; route threshold {args.route_threshold}")
    print("AUROC (highest fused token probability): " + ", ".join(
        f"{n} {table[best][n].auroc:.3f}" for n in names if n not in SHOWN_ONLY
    ))
    print("balanced accuracy per set (faithful twins: false alarms); the best min_span_length of each row")
    print(f"{'aggregation':>11} {'tau':>5} {'min':>4}  " + "  ".join(f"{n[:22]:>22}" for n in names) + "    mean")
    tuned = [n for n in names if n not in SHOWN_ONLY]
    for aggregation, threshold in itertools.product(AGGREGATIONS, THRESHOLDS):
        rows = [d for d in table if d.rules.aggregation == aggregation and d.rules.token_threshold == threshold]
        if not rows:
            continue
        d = max(rows, key=lambda d: np.mean([table[d][n].balanced_accuracy for n in tuned]))
        cells = [
            f"{table[d][n].false_alarms if 'twins' in n else table[d][n].balanced_accuracy:.3f}" for n in names
        ]
        mean = np.mean([table[d][n].balanced_accuracy for n in tuned])
        mark = "  <- chosen" if d == best else ""
        print(f"{aggregation:>11} {threshold:>5.2f} {d.rules.min_span_length:>4}  "
              + "  ".join(f"{c:>22}" for c in cells) + f"  {mean:.3f}{mark}")
    print(f"chosen: aggregation {best.rules.aggregation}, token threshold {best.rules.token_threshold}, "
          f"min span length {best.rules.min_span_length}, role check {'on' if role_checks else 'off'}")
    if args.write:
        path = resolve_model_dir(args.model) / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["calibration"] = {
            "token_threshold": best.rules.token_threshold,
            "aggregation": best.rules.aggregation,
            "min_span_length": best.rules.min_span_length,
            "role_checks": role_checks,
            "route_threshold": args.route_threshold,
            "objective": (
                f"mean balanced accuracy over the RAGTruth and HaluEval dev sets, token thresholds below {below}, "
                f"lowest within {TIE} of the best"
            ),
            "data": "RAGTruth dev fold (odd source_id, (source_id // 2) % 5 == 0) + HaluEval dev fold (i % 10 == 1)",
            "command": "python -m training.calibrate --write"
            + (f" --role-checks {args.role_checks}" if args.role_checks != "auto" else ""),
            "at_choice": {
                n: {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(table[best][n]).items()}
                for n in names
            },
        }
        path.write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"decision -> {path}")
        if "verdict" in manifest:
            # The verdict's features were computed under the previous token rules.
            print("the model has a learned verdict: refit it with python -m training.verdict --write")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
