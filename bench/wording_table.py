"""The wording table of ``python -m bench.detector_quality --wordings`` (development data only).

The development answers of each task shape (RAGTruth's odd-``source_id`` dev part whole; the
first answers of HaluEval's dev fold and, with a training mix, of the XSum and Quintd-1 dev
parts) are checked under every instruction wording of :mod:`bench.wordings`, the shipped model
with its defaults. Per wording: the share of faithful answers flagged and the balanced accuracy,
per set and pooled, the spread of balanced accuracy across the wordings, and how each wording's
requests are read (``read as``: the task named in ``x-truthlens-task``).

``--request-reading shape-only`` measures the other remedy the wording problem allows: the task
shape read from the context (the verdict's model per shape), the model's prompt and the fact
check left with the question as sent (``prompt.checked`` switched off).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench import wordings
from bench.quality_tables import print_table, settings_for
from training.corpus import halueval
from training.scoring import Case, Decision, Scored, halueval_cases, metrics, ragtruth_cases, score_cases
from training.verdict_data import human_dev_cases
from truthlens.detector import engine as engine_module
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.prompt import checked, read_task
from truthlens.detector.types import DetectionInput


def wording_sets(
    ragtruth_dir: Path, halueval_root: Path, human_dev: Path | None, items: int
) -> dict[str, dict[str, list[Case]]]:
    """The development answers each shape's wordings are applied to, by shape and set
    (RAGTruth's dev part whole; the other sets' first ``items`` answers)."""
    sets: dict[str, dict[str, list[Case]]] = {
        "qa": {"ragtruth qa (dev)": ragtruth_cases("qa", ("dev",), ragtruth_dir)},
        "summary": {"ragtruth summary (dev)": ragtruth_cases("summary", ("dev",), ragtruth_dir)},
        "record": {"ragtruth data2txt (dev)": ragtruth_cases("data2txt", ("dev",), ragtruth_dir)},
    }
    if items > 0:  # (each item is a right and a hallucinated answer)
        sets["qa"]["halueval qa (dev)"] = halueval_cases("qa", ("dev",), halueval_root, items // 2)
        sets["summary"]["halueval summarization (dev)"] = halueval_cases(
            "summarization", ("dev",), halueval_root, items // 2)
        if human_dev is not None:
            sets["summary"]["xsum (dev)"] = human_dev_cases(human_dev, "xsum_faith")[:items]
            sets["record"]["quintd (dev)"] = human_dev_cases(human_dev, "quintd")[:items]
    return sets


def worded(case: Case, wording: wordings.Wording) -> Case:
    item = case.item
    return dataclasses.replace(
        case, item=DetectionInput(item.context, wording.question(item.question, item.context), item.answer))


@contextmanager
def questions_as_sent(on: bool) -> Iterator[None]:
    """With ``on``, the engine checks every request with its question as sent (no canonical
    instruction); the verdict still reads the task shape from the context."""
    if not on:
        yield
        return
    names = vars(engine_module)  # the engine's own binding of prompt.checked
    saved = names["checked"]
    names["checked"] = lambda item: item
    try:
        yield
    finally:
        names["checked"] = saved


async def score_wordings(
    engine: DetectorEngine, sets: dict[str, dict[str, list[Case]]], shape_only: bool = False
) -> dict[tuple[str, str, str], list[Scored]]:
    """Every (shape, set, wording)'s answers scored; an input the engine sees as another
    wording's (same context, answer and checked question) is scored once."""
    keyed: dict[tuple[str, str, str], list[tuple[object, Case]]] = {}
    unique: dict[object, Case] = {}
    for shape, by_set in sets.items():
        for set_name, cases in by_set.items():
            for wording in wordings.BY_SHAPE[shape]:
                rows = []
                for case in cases:
                    w = worded(case, wording)
                    key = checked_key(w.item, shape_only)
                    unique.setdefault(key, w)
                    rows.append((key, w))
                keyed[(shape, set_name, wording.name)] = rows
    keys = list(unique)
    print(f"{sum(len(v) for v in keyed.values())} worded answers, {len(keys)} distinct as checked", flush=True)
    scored = dict(zip(keys, await score_cases(engine, [unique[k] for k in keys]), strict=True))
    # Each answer keeps its own worded case (the verdict reads the question as sent).
    return {k: [dataclasses.replace(scored[key], case=case) for key, case in rows] for k, rows in keyed.items()}


def read_as(answers: list[Scored]) -> str:
    """How the requests were read (``Task.name``), the commonest first with its share."""
    names = Counter(read_task(a.case.item.context, a.case.item.question).name for a in answers)
    return ", ".join(f"{name} {100 * n / len(answers):.0f}%" for name, n in names.most_common())


def checked_key(item: DetectionInput, as_sent: bool = False) -> object:
    """What the engine's check depends on (the context, the question as checked, the answer)."""
    return (tuple(item.context), item.question if as_sent else checked(item).question, item.answer)


def run(args: argparse.Namespace) -> int:
    root = halueval.fetch(args.halueval)
    sets = {shape: by_set for shape, by_set in wording_sets(args.ragtruth, root, args.human_dev,
                                                            args.wording_items).items()
            if shape in args.wording_shapes}
    shape_only = args.request_reading == "shape-only"
    engine = create_detector(settings_for())
    assert isinstance(engine, DetectorEngine), "the bench scores tokens in process (backend: onnx)"
    started = time.perf_counter()
    with questions_as_sent(shape_only):
        try:
            scored = asyncio.run(score_wordings(engine, sets, shape_only))
        finally:
            asyncio.run(engine.close())
    decision = Decision(engine.rules, args.threshold, engine.verdict)
    print(f"scored in {time.perf_counter() - started:.0f} s; shipped model, its defaults, response threshold "
          f"{args.threshold}; requests read: {args.request_reading}\n")
    for shape, by_set in sets.items():
        names = [*by_set, "pooled"]
        rows: dict[str, dict[str, str]] = {}
        spread: dict[str, list[float]] = {n: [] for n in names}
        for wording in wordings.BY_SHAPE[shape]:
            row: dict[str, str] = {}
            pooled: list[Scored] = []
            for set_name in by_set:
                answers = scored[(shape, set_name, wording.name)]
                pooled.extend(answers)
                m = metrics(answers, decision)
                row[f"{set_name} FA"], row[f"{set_name} BA"] = f"{m.false_alarms:.3f}", f"{m.balanced_accuracy:.3f}"
                spread[set_name].append(m.balanced_accuracy)
            m = metrics(pooled, decision)
            row["pooled FA"], row["pooled BA"] = f"{m.false_alarms:.3f}", f"{m.balanced_accuracy:.3f}"
            row["read as"] = read_as(pooled)
            spread["pooled"].append(m.balanced_accuracy)
            rows[wording.name] = row
        rows["BA spread (max - min)"] = {f"{n} BA": f"{max(v) - min(v):.3f}" for n, v in spread.items()}
        counts = ", ".join(f"{n} {len(c)} ({sum(x.hallucinated for x in c)} hallucinated)" for n, c in by_set.items())
        print_table(f"wordings, {shape}: {counts}; FA = faithful answers flagged, BA = balanced accuracy; "
                    "read as = the task the gateway reads the request as (x-truthlens-task, share of answers)",
                    [*(f"{n} {k}" for n in names for k in ("FA", "BA")), "read as"], rows)
    return 0
