"""The answers the verdict is fitted and chosen on, each scored once by the model, cached.

A set's answers are run through the shipped model the way serving runs them (grounded rows,
:meth:`DetectorEngine.token_scores`: the model's own token probabilities) and through the
sentence embedder for the support score; both are kept in ``training/output/verdict/`` so the
fact check, fusion and the verdict itself can be changed and refitted without another model
pass. The cache is keyed by the model's graph (its bytes; an ensemble's, every
member's): a retrained model is scored afresh.

Sets (development data only; the evaluation folds are never read here):

- RAGTruth odd ``source_id``: the dev part (``(source_id // 2) % 5 == 0``) and the train part;
- HaluEval dev fold (i % 10 == 1): QA, summarization, dialogue (right and hallucinated answer),
  and the QA items' faithful twins (the hallucinated sentence with the right answer put in);
- with a training mix given (``--human-dev``): the dev parts of the human-labelled sets it wrote
  (``dev_<set>.jsonl``: Quintd-1 data-to-text, XSum summaries), split by source document;
- with ``mixups`` (``--mixups N``): in-context mix-ups and their faithful twins written by rule
  from the **train parts'** contexts (:mod:`training.corpus.mixups`, fitted on like a train
  part), and the bench's tuning sample (:mod:`bench.mixups` ``--split tuning``, from the dev
  parts' contexts: reported, never fitted on). The bench's held-out sample is never read here.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.corpus import halueval, ragtruth
from training.corpus.splits import read_jsonl
from training.scoring import BLOCK, Case, halueval_cases, ragtruth_cases
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.facts import FactCheck, check_facts
from truthlens.detector.fusion import fused
from truthlens.detector.prompt import Shape, checked, model_questions, read_task
from truthlens.detector.types import DetectionInput
from truthlens.detector.verdict import MAX_SUPPORT_SENTENCES, SUPPORT_SHORTLIST, Signals, signals_for, support_scores

CACHE_DIR = Path("training/output/verdict")


@dataclass(frozen=True, slots=True)
class Raw:
    """One answer as the model and the embedder saw it (no fact check yet)."""

    case: Case
    probs: np.ndarray
    offsets: np.ndarray
    support: tuple[float, float] | None

    @property
    def shape(self) -> Shape:
        return read_task(self.case.item.context, self.case.item.question).shape


# The human-labelled sets whose dev parts the verdict reads. The accuracy shared task's 11 dev
# reports are all hallucinated (one class: nothing to fit or choose on), so it is left out.
HUMAN_DEV_SETS = ("quintd", "xsum_faith")


def human_dev_cases(mix: Path, name: str) -> list[Case]:
    """The dev part of one human-labelled set, as ``training.corpus.llm_mix`` wrote it."""
    path = mix / f"dev_{name}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} missing: build the mix with python -m training.corpus.llm_mix "
                                f"and the set's clone (see training/README.md)")
    return [
        Case(DetectionInput(ex.context, ex.question, ex.answer), ex.hallucinated,
             tuple((span.start, span.end) for span in ex.labels))
        for ex in read_jsonl(path)
    ]


MIXUPS_TRAIN = "mixups (train)"
MIXUPS_TUNING = "mixups (tuning)"


def mixup_sets(rag_root: Path, hal_root: Path, per_kind: int) -> tuple[dict[str, list[Case]], list[str]]:
    """The generated mix-up sets (``per_kind`` answers of each kind, the tuning sample half as
    many) and the kind of each tuning answer, in order."""
    from bench.mixups import generate as bench_sample
    from training.corpus import mixups

    tuning = bench_sample("tuning", max(1, per_kind // 2), rag_root, hal_root)
    sets = {MIXUPS_TRAIN: mixups.as_scored(mixups.generate(per_kind, mixups.SEED, rag_root, hal_root)),
            MIXUPS_TUNING: mixups.as_scored(tuning)}
    return sets, [c.kind for c in tuning]


def development_sets(
    hal_root: Path, rag_root: Path, items: int, summarization_items: int, human_dev: Path | None = None
) -> dict[str, list[Case]]:
    sets: dict[str, list[Case]] = {}
    for task in ragtruth.TASKS:
        sets[f"ragtruth {task} (dev)"] = ragtruth_cases(task, ("dev",), rag_root)
        sets[f"ragtruth {task} (train)"] = ragtruth_cases(task, ("train",), rag_root)
    for task, n in (("qa", items), ("summarization", summarization_items), ("dialogue", items)):
        sets[f"halueval {task} (dev)"] = halueval_cases(task, ("dev",), hal_root, n)  # type: ignore[arg-type]
    # HaluEval's right QA answers are phrases and its hallucinated ones sentences: without the
    # faithful sentence twins the verdict learns "a sentence is a hallucination".
    twins = []
    for _, row in halueval.items("qa", ("dev",), hal_root):
        given = (row["knowledge"], row["question"])
        twin = halueval.faithful_twin(row["hallucinated_answer"], row["right_answer"], given)
        if twin is not None:
            twins.append(Case(DetectionInput((row["knowledge"],), row["question"], twin), False))
        if len(twins) >= items:
            break
    sets["halueval qa faithful twins (dev)"] = twins
    if human_dev is not None:
        for name in HUMAN_DEV_SETS:
            sets[f"{name} (dev)"] = human_dev_cases(human_dev, name)
    return sets


@functools.cache
def _graph_digest(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()[:16]


def _key(engine: DetectorEngine, name: str, cases: list[Case], with_support: bool) -> str:
    # An ensemble's scores depend on every member's graph, not only the directory's own. Keyed
    # by the graphs' bytes, not their modification times, so that every checkout of the same
    # model reads the same cache.
    graphs = [engine.manifest.model_path, *(m / "model.onnx" for m in engine.manifest.ensemble)]
    # The support score's settings are part of what was scored: a changed shortlist rescores.
    support = f"{SUPPORT_SHORTLIST}:{MAX_SUPPORT_SENTENCES}" if with_support else "no-support"
    models = ":".join(_graph_digest(g) for g in graphs)
    digest = hashlib.sha1(f"{models}:{len(cases)}:{support}".encode())
    # The questions as the model reads them: a change in how requests are read rescores.
    for c in cases:
        digest.update("\x00".join(model_questions(checked(c.item).question)).encode())
    for c in cases[:5]:
        digest.update(c.item.answer.encode())
    return f"{name.replace(' ', '_').replace('(', '').replace(')', '')}-{digest.hexdigest()[:10]}.pkl"


async def _score(engine: DetectorEngine, cases: list[Case], with_support: bool) -> list[Raw]:
    encoder = getattr(engine.relevance, "encoder", None) if with_support else None

    async def one(case: Case) -> Raw:
        scores = await engine.token_scores(case.item)
        support = await asyncio.to_thread(support_scores, case.item.answer, case.item.context, encoder)
        return Raw(case, scores.probs, scores.offsets, support)

    out: list[Raw] = []
    for i in range(0, len(cases), BLOCK):
        out.extend(await asyncio.gather(*(one(c) for c in cases[i : i + BLOCK])))
    return out


def load_or_score(
    engine: DetectorEngine, sets: dict[str, list[Case]], *, with_support: bool = True, cache: Path = CACHE_DIR
) -> dict[str, list[Raw]]:
    """Every set's raw scores, from the cache (``cache``) where the same model scored it before.
    Without ``with_support`` the embedder's support score is left out (``None``: a fit that does
    not read it needs no embedder pass per answer, about as costly as the model's)."""
    cache.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[Raw]] = {}
    for name, cases in sets.items():
        path = cache / _key(engine, name, cases, with_support)
        if path.exists():
            out[name] = pickle.loads(path.read_bytes())
            continue
        out[name] = asyncio.run(_score(engine, cases, with_support))
        path.write_bytes(pickle.dumps(out[name]))
        print(f"scored {name}: {len(cases)} answers -> {path}", flush=True)
    return out


def signals(raw: Raw, roles: bool = True) -> Signals:
    """What serving would hand the verdict for this answer: the fact check run and fused in."""
    item = raw.case.item
    facts = check_facts(item.answer, item.context, item.question, roles=roles) if item.answer.strip() else FactCheck(
        (), ()
    )
    probs = fused(raw.probs, raw.offsets, facts)
    return signals_for(item, probs, raw.offsets, facts.findings, raw.support)
