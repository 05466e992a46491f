"""Detector quality on text nobody here wrote, side by side: the shipped model vs the previous one.

Three tables, one run, every configuration on the same inputs:

1. **RAGTruth evaluation half** (Niu et al. 2024, MIT; via ``vectara/FaithJudge`` ``eval_data/``;
   responses whose ``source_id`` is even — never trained, tuned or used to choose a checkpoint):
   answers of GPT-3.5/4, Llama-2 and Mistral to QA, news-summary and data-to-text prompts with
   human span labels → per task and pooled: example F1 and balanced accuracy of the
   "hallucinated" class, AUROC of the answer's highest fused token probability (ranking, apart
   from the threshold), character-span F1; published LettuceDetect / TinyLettuce example F1 as
   anchor rows.
2. **HaluEval evaluation fold** (RUCAIBox 2023, MIT; line index i % 10 == 0): QA, summarization
   and dialogue, each item's right and hallucinated answer (balanced) → accuracy and F1; the
   HaluEval paper's ChatGPT as anchor.
3. **The long-context pair** (~20k tokens, :mod:`training.corpus.long_context`; development
   data, HaluEval dev-fold news, so apart from the evaluation tables): the faithful answer must be
   clean, the wrong-year variant flagged on the year.

``--beside COMMIT`` adds the shipped defaults of another build (its code, bench and model from
git, run in a child process on the same answers) as a row of each table.

Every answer is scored the way ``truthlens detect`` scores it (:mod:`training.scoring`: the
same fused token probabilities and the same ``score_answer``), with each configuration's own
decision (span rules from its settings, else its model's calibrated ones) and the route
threshold.

    python -m bench.detector_quality [--items 300] [--summarization-items 150] [--model DIR ...]
        [--beside COMMIT] [--chart PNG]
    python -m bench.detector_quality --wordings [--wording-items 100] [--human-dev training/output/llm5]

``--wordings`` prints a third table instead, on development data only: the development answers
of each task shape (RAGTruth's odd-``source_id`` dev part; the dev parts of HaluEval, and with a
training mix, XSum and Quintd-1) checked under every instruction wording of
:mod:`bench.wordings`, the shipped model with its defaults: per wording, the share of faithful
answers flagged and the balanced accuracy, per set and pooled.

The previous shipped model (run 6: run 3 trained on the human-labelled mix on one GPU,
training/README.md) is kept in ``bench/baselines/run6`` and runs with the defaults its manifest
carries (calibrated token rules, role check, learned verdict), under this build's fact check; the
shipped model (run 9) continued from it. Older ones are in the repository's history; the
HaluEval-trained ``bench/baselines/halueval-v2`` is what the recipe's run 3 started from.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import baselines, charts, other_build
from bench.quality_tables import print_table, settings_for
from training.corpus import halueval, long_context, ragtruth
from training.scoring import Case, Decision, Metrics, Scored, halueval_cases, metrics, ragtruth_cases, score_cases
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.calibration.probability import DEFAULT_THRESHOLD
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.types import DetectionInput, DetectorSettings

PREVIOUS_DIR = baselines.restore("run6")  # from git history (bench/baselines.py)
# Published RAGTruth example-level F1 (%), whole test set: LettuceDetect (Kovács et al. 2025)
# and TinyLettuce (KRLabs 2025).
RAGTRUTH_ANCHORS = {
    "LettuceDetect base (ModernBERT 149M, published)": 76.8,
    "LettuceDetect large (ModernBERT 395M, published)": 79.2,
    "TinyLettuce 17M (published)": 68.5,
    "TinyLettuce 32M (published)": 72.2,
}
# HaluEval paper, Table 5 (ChatGPT, zero-shot, accuracy %).
HALUEVAL_ANCHORS = {"ChatGPT zero-shot (HaluEval paper)": {"qa": 62.59, "dialogue": 72.40, "summarization": 58.53}}
HALUEVAL_COLUMNS = [f"{t} {k}" for t in ("qa", "summarization", "dialogue") for k in ("acc", "F1", "AUROC")]
PAIR_COLUMNS = ("20k faithful", "20k wrong year")


@dataclass(frozen=True, slots=True)
class Config:
    name: str
    settings: DetectorSettings


def configurations(extra_models: Sequence[Path] = ()) -> list[Config]:
    return [
        Config("previous shipped (run 6, its defaults)", settings_for(model_dir=str(PREVIOUS_DIR))),
        Config("shipped (defaults)", settings_for()),
        *(Config(f"{m.name} (its defaults)", settings_for(model_dir=str(m))) for m in extra_models),
    ]


async def evaluate(
    config: Config, data: dict[str, list[Case]], pair: long_context.LongContextPair, threshold: float
) -> dict[str, tuple[dict[str, Metrics], dict[str, str]]]:
    """Each decision's metrics over the same scored answers: the configuration's own, and for a
    model with a learned verdict also its span rule alone (what decided before the verdict)."""
    engine = create_detector(config.settings)
    assert isinstance(engine, DetectorEngine), "the bench scores tokens in process (backend: onnx)"
    decisions = {config.name: Decision(engine.rules, threshold, engine.verdict)}
    if engine.verdict is not None:
        decisions[f"{config.name}, span rule alone"] = Decision(engine.rules, threshold)
    started = time.perf_counter()
    try:
        scored: dict[str, list[Scored]] = {name: await score_cases(engine, cases) for name, cases in data.items()}
        faithful, wrong = await score_cases(
            engine,
            [
                Case(DetectionInput(pair.context, pair.question, pair.faithful), False),
                Case(DetectionInput(pair.context, pair.question, pair.wrong), True),
            ],
        )
    finally:
        await engine.close()
    seconds = f"{time.perf_counter() - started:.0f}"
    out = {}
    for name, decision in decisions.items():
        results = {set_name: metrics(s, decision) for set_name, s in scored.items()}
        pooled = [one for set_name, answers in scored.items() if set_name.startswith("ragtruth ") for one in answers]
        results["ragtruth all"] = metrics(pooled, decision)
        extra: dict[str, str] = {}
        flagged, _ = decision.judge(faithful)
        extra["20k faithful"] = "detected" if flagged else "clean"
        flagged, spans = decision.judge(wrong)
        year = pair.wrong.index(long_context.WRONG_YEAR)
        on_year = any(s.start <= year < s.end for s in spans)
        extra["20k wrong year"] = ("detected" if flagged else "clean") + (" @year" if on_year else "")
        extra["decision"] = (
            "learned verdict" if decision.verdict is not None else
            f"{decision.rules.aggregation} tau {decision.rules.token_threshold:g} min {decision.rules.min_span_length}"
        )
        extra["s"] = seconds
        out[name] = (results, extra)
    return out


def evaluation_sets(ragtruth_dir: Path, halueval_root: Path, items: int, summarization_items: int,
                    ragtruth_items: int | None = None) -> dict[str, list[Case]]:
    """The evaluation answers by set: RAGTruth's evaluation half per task (its first
    ``ragtruth_items`` answers each, for a quick look; all by default), HaluEval's evaluation fold."""
    data = {f"ragtruth {task}": ragtruth_cases(task, ("eval",), ragtruth_dir)[:ragtruth_items]
            for task in ragtruth.TASKS}
    data["halueval qa"] = halueval_cases("qa", ("eval",), halueval_root, items)
    data["halueval summarization"] = halueval_cases("summarization", ("eval",), halueval_root, summarization_items)
    data["halueval dialogue"] = halueval_cases("dialogue", ("eval",), halueval_root, items)
    return data


def describe(data: dict[str, list[Case]]) -> str:
    return ", ".join(f"{name} {len(cases)} ({sum(c.hallucinated for c in cases)} hallucinated)"
                     for name, cases in data.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.detector_quality", description=__doc__.splitlines()[0])
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR, help="HaluEval (fetched if missing)")
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR, help="RAGTruth (training/README.md)")
    parser.add_argument("--items", type=int, default=300, help="HaluEval QA and dialogue items (x2 answers each)")
    parser.add_argument("--summarization-items", type=int, default=150, help="HaluEval summarization items (x2)")
    parser.add_argument("--ragtruth-items", type=int, default=None,
                        help="only the first N RAGTruth answers per task (a quick look; the table's figures use all)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="response score threshold (default: each build's own routes' default)")
    parser.add_argument("--shipped-only", action="store_true", help="leave the previous model out (half the time)")
    parser.add_argument("--model", type=Path, nargs="*", default=[],
                        help="also these model directories (an ensemble, an optional model package), their defaults")
    parser.add_argument("--chart", type=Path, help="also draw balanced accuracy per set as this PNG (the bench extra)")
    parser.add_argument("--beside", nargs="*", default=[], metavar="COMMIT",
                        help="also the shipped defaults of the build at these commits (their own code, bench and "
                             "model, from git), on the same answers")
    parser.add_argument("--wordings", action="store_true",
                        help="instead: the wording table on the development answers (bench/wordings.py)")
    parser.add_argument("--wording-items", type=int, default=100,
                        help="answers per non-RAGTruth set in the wording table (RAGTruth's dev part is whole)")
    parser.add_argument("--human-dev", type=Path, default=None,
                        help="a training mix (python -m training.corpus.llm_mix): XSum and Quintd-1 dev parts too")
    parser.add_argument("--wording-shapes", nargs="+", choices=("qa", "summary", "record"),
                        default=["qa", "summary", "record"], help="wording table: these task shapes only")
    parser.add_argument("--request-reading", choices=("canonical", "shape-only"), default="canonical",
                        help="wording table: the shipped reading, or the shape from the context alone "
                             "(questions as sent to the model)")
    args = parser.parse_args(argv)
    args.explicit_threshold = args.threshold  # None: another build (--beside) judges at its own default
    args.threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    if not ragtruth.available(args.ragtruth):
        parser.error(f"RAGTruth files not in {args.ragtruth}: python -m training.corpus.ragtruth --faithjudge DIR")
    if args.wordings:
        from bench import wording_table  # (imported only when asked for: it loads the wordings)

        return wording_table.run(args)
    root = halueval.fetch(args.halueval)
    data = evaluation_sets(args.ragtruth, root, args.items, args.summarization_items, args.ragtruth_items)
    pair = long_context.build(root)
    print(f"answers: {describe(data)}; long-context pair {len(pair.context)} passages; "
          f"response threshold {args.threshold}\n")

    chosen = [c for c in configurations(args.model) if not args.shipped_only or not c.name.startswith("previous")]
    # The other build first: its child process then has the cores to itself, as this one does after.
    beside = {name: rows for commit in args.beside for name, rows in beside_commit(commit, args).items()}
    results = {name: row for c in chosen for name, row in asyncio.run(evaluate(c, data, pair, args.threshold)).items()}
    rag_rows: dict[str, dict[str, str]] = {}
    for name, (m, extra) in results.items():
        row = {"decision": extra["decision"]}
        for task in (*ragtruth.TASKS, "all"):
            r = m[f"ragtruth {task}"]
            row[f"{task} F1"], row[f"{task} BA"] = f"{r.f1:.3f}", f"{r.balanced_accuracy:.3f}"
            row[f"{task} AUROC"], row[f"{task} spanF1"] = f"{r.auroc:.3f}", f"{r.span_f1 or 0:.3f}"
        row["all FA"] = f"{m['ragtruth all'].false_alarms:.3f}"
        rag_rows[name] = row
    for name, (rag, _, _) in beside.items():
        rag_rows[name] = rag
    for name, f1 in RAGTRUTH_ANCHORS.items():
        rag_rows[name] = {"all F1": f"{f1 / 100:.3f}"}
    columns = ["decision"] + [f"{t} {k}" for t in (*ragtruth.TASKS, "all") for k in ("F1", "BA", "AUROC", "spanF1")]
    print_table("RAGTruth evaluation half (even source_id): example F1, balanced accuracy, AUROC, "
                 "character-span F1; FA = faithful answers flagged", [*columns, "all FA"], rag_rows)

    hal_rows: dict[str, dict[str, str]] = {}
    pair_rows: dict[str, dict[str, str]] = {}
    for name, (m, extra) in results.items():
        row = {"s": extra["s"]}
        for task in ("qa", "summarization", "dialogue"):
            r = m[f"halueval {task}"]
            row[f"{task} acc"], row[f"{task} F1"] = f"{r.accuracy:.3f}", f"{r.f1:.3f}"
            row[f"{task} AUROC"] = f"{r.auroc:.3f}"
        hal_rows[name] = row
        pair_rows[name] = {k: extra[k] for k in PAIR_COLUMNS}
    for name, (_, hal, pair) in beside.items():
        hal_rows[name], pair_rows[name] = hal, pair
    for name, anchor in HALUEVAL_ANCHORS.items():
        hal_rows[name] = {f"{t} acc": f"{v / 100:.3f}" for t, v in anchor.items()}
    print_table("HaluEval evaluation fold (i % 10 == 0), balanced", [*HALUEVAL_COLUMNS, "s"], hal_rows)
    print_table("Long-context pair (development data: HaluEval dev-fold news around one fact passage, ~20k tokens)",
                list(PAIR_COLUMNS), pair_rows)
    if args.chart:
        charts.quality_per_task(charts.balanced_accuracy_by_task([rag_rows, hal_rows]), args.chart,
                                "Detector quality per evaluation set (bench.detector_quality)")
    return 0


def beside_commit(commit: str, args: argparse.Namespace) -> dict[str, tuple[dict[str, str], ...]]:
    """The shipped defaults of the build at ``commit`` on the same answers: its own bench, model and
    code run in a child process (:mod:`bench.other_build`), its rows read back from the tables it prints."""
    command = ["--shipped-only", "--ragtruth", str(args.ragtruth.resolve()), "--halueval", str(args.halueval.resolve()),
               "--items", str(args.items), "--summarization-items", str(args.summarization_items)]
    if args.explicit_threshold is not None:
        command += ["--threshold", str(args.explicit_threshold)]
    if args.ragtruth_items is not None:  # (a build older than this option refuses it, saying so)
        command += ["--ragtruth-items", str(args.ragtruth_items)]
    out = other_build.output_at(commit, ("src", "bench", "training"), "bench.detector_quality", command)
    return {f"{commit}: shipped (defaults)": build_rows(out)}


def build_rows(printed: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """The "shipped (defaults)" row of another build's printed tables: its RAGTruth cells, its
    HaluEval cells and its long-context pair (a table of its own, or, in older builds, columns of
    the HaluEval table)."""
    tables = table_rows(printed, "shipped (defaults)")
    rag, hal = (tables[i] if i < len(tables) else {} for i in range(2))
    pair = {k: next((t[k] for t in tables if k in t), "-") for k in PAIR_COLUMNS}
    return rag, hal, pair


def table_rows(printed: str, name: str) -> list[dict[str, str]]:
    """The cells of the row called ``name`` in each table ``print_table`` printed, by column, one
    mapping per table in order (the tables share column names: "qa F1" is RAGTruth's in one,
    HaluEval's in the next)."""
    tables: list[dict[str, str]] = []
    header: list[str] = []
    for line in printed.splitlines():
        parts = re.split(r"\s{2,}", line.strip())
        if parts and parts[0] == "configuration":
            header = parts
            tables.append({})
        elif parts and parts[0] == name and header:
            tables[-1].update(zip(header[1:], parts[1:], strict=False))
    return tables


if __name__ == "__main__":
    raise SystemExit(main())
