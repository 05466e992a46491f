"""Fit the answer's verdict (:mod:`truthlens.detector.verdict`) and choose its operating point.

Development data only (:mod:`training.verdict_data`): the RAGTruth odd half — its train part
for fitting, its dev part (``(source_id // 2) % 5 == 0``) for fitting *and* choosing — and the
HaluEval dev fold (i % 10 == 1). The evaluation folds (RAGTruth even ``source_id``, HaluEval
i % 10 == 0) are never read here; ``python -m bench.detector_quality`` reports them. With
``--mixups N`` the fit also reads mix-ups generated from the train parts' contexts
(:mod:`training.corpus.mixups`, weighed ``--mixup-weight`` beside a real set), and reports the
mix-up bench's tuning sample (dev parts' contexts, never fitted on) per kind under the final
models; the bench's held-out sample is left to ``python -m bench.mixups --split held-out``.

1. Every answer is scored once by the model and the embedder (cached), then run through the
   fact check and fusion as serving does, and turned into the verdict's features.
2. One logistic regression per task shape (passages, article, record; standardised features,
   L2, Newton steps; every set weighs the same whatever its size, and within a set both classes
   weigh the same; evidence of an error may only raise the score) is fitted. Its choices are
   made on **out-of-fold** predictions for the dev parts: the dev answers are cut into
   :data:`FOLDS` groups by source (the six responses to one RAGTruth source, or HaluEval's right
   and hallucinated answer to one item, stay together), and each group is predicted by a model
   fitted on the train part plus the other groups.
3. The operating point, per shape: the lowest score at which at most :data:`MAX_FALSE_ALARMS` of the
   faithful answers are flagged, both on the RAGTruth dev part and on the HaluEval dev fold;
   the served score is shifted so that the routes' default threshold 0.5 sits there. The table
   printed (and the README's) gives faithful answers flagged and recall per route threshold.
4. ``--write`` stores the final model (fitted on all of it) in the model's ``manifest.json``
   under ``verdict``, without a probability map (``verdict.probability``: the model does not
   load until ``python -m training.calibrate_tasks --write`` fits it to the new log-odds), and
   the fit's fold models in :data:`SHIPPED_FOLDS`. Refit whenever the model or the fact check
   changes, and keep the refit where the dev parts say so against the shipped fit's fold models
   scored on the same features (``--folds``; training/README.md):

    python -m training.verdict --human-dev training/output/llm5 --folds training/verdict_folds.json --save-oof a.npz
    python -m training.verdict --human-dev training/output/llm5 --save-oof b.npz
    python -m training.compare a.npz b.npz
    python -m training.verdict --human-dev training/output/llm5 --write && python -m training.calibrate_tasks --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from training.compare import OutOfFold, groups
from training.corpus import halueval, ragtruth
from training.evaluate import auroc
from training.verdict_data import (
    CACHE_DIR,
    HUMAN_DEV_SETS,
    MIXUPS_TRAIN,
    MIXUPS_TUNING,
    Raw,
    development_sets,
    load_or_score,
    mixup_sets,
    signals,
)
from truthlens.detector.backends.factory import create_detector
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.manifest import resolve_model_dir
from truthlens.detector.prompt import SHAPES
from truthlens.detector.spans import SpanRules, score_answer
from truthlens.detector.types import DetectorSettings
from truthlens.detector.verdict import FEATURES, SUPPORT_FEATURES, VerdictModel, features

FOLDS = 5
MAX_FALSE_ALARMS = 0.25
# HaluEval's sets beside RAGTruth's. Chosen on the dev parts by the mean balanced accuracy over
# the six sets (out-of-fold, before the twins and sign constraints): 1.0 gave 0.727, 0.3 gave
# 0.714 (RAGTruth better: QA 0.755 -> 0.775, summary 0.688 -> 0.719; HaluEval worse: QA 0.892 ->
# 0.860, summarization 0.753 -> 0.703).
HALUEVAL_WEIGHT = 1.0
MIN_FAITHFUL = 20  # a family's faithful dev answers needed for it to bind the operating point
L2 = 10.0  # on standardised features; the sets are small (chosen on the dev parts: 0.3-10 differ little)
ROUTE_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
ITEMS = 300  # HaluEval dev QA and dialogue items
SUMMARIZATION_ITEMS = 150
# Generated mix-ups (training.corpus.mixups) per kind, and their weight beside a real set. Chosen
# on the dev parts (out-of-fold) and the mix-up bench's tuning sample (training/README.md): at
# 2.0 the tuning sample's sentence-level kinds rose from 0-77% caught to 77-100% at the same
# share of faithful rewordings flagged (at 1.0 the two name kinds stayed near 50%); RAGTruth's
# QA and summary dev parts moved within noise, HaluEval's mean balanced accuracy 0.743 -> 0.729.
MIXUPS = 60
MIXUP_WEIGHT = 2.0
# The fact check's per-check counts (a moved term, a record's field), beside the by-reason ones.
# Left out unless asked: with the mix-ups in the fit they took weight 0 to 0.1 and changed the
# tuning sample and the dev parts by noise only (training/README.md).
CHECK_FEATURES = ("moved", "fields")
# The shipped verdict's fold models, rewritten by every ``--write`` for the shipped model: after a
# change to the fact check, ``--folds`` scores them on the new features, the fit a refit must beat.
SHIPPED_FOLDS = Path("training/verdict_folds.json")


def feature_rows(raws: Sequence[Raw], rules: SpanRules, roles: bool) -> list[dict[str, float]]:
    """The features of ``raws`` as serving computes them: the same token rules, and role findings
    only where the model's calibration keeps the role check (else the fit reads what serving never sees)."""
    return [features(signals(r, roles=roles), rules) for r in raws]


def design(rows: Sequence[dict[str, float]], names: Sequence[str]) -> np.ndarray:
    return np.array([[row[n] for n in names] for row in rows], dtype=np.float64).reshape(len(rows), len(names))


def load_folds(path: Path) -> dict[str, list[VerdictModel]]:
    """Fold models a fit saved (``--save-folds``): per task shape, one per group of :data:`FOLDS`."""
    raw = json.loads(path.read_text())
    folds: dict[str, list[VerdictModel]] = {
        shape: [VerdictModel.from_json(m) for m in raw.get(shape, [])] for shape in SHAPES}
    wrong = [shape for shape, models in folds.items() if len(models) != FOLDS]
    if wrong:
        raise ValueError(f"{path}: needs {FOLDS} fold models for each of {', '.join(wrong)}")
    return folds


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, names: Sequence[str]) -> VerdictModel:
    """Weighted L2 logistic regression by Newton's method; NaN (a missing support score) is
    replaced by the feature's mean, as serving does."""
    mean = np.array([np.nanmean(x[:, j]) if np.isfinite(x[:, j]).any() else 0.0 for j in range(x.shape[1])])
    x = np.where(np.isnan(x), mean, x)
    scale = x.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], L2)
    penalty[-1] = 0.0  # the bias is not shrunk
    w = w / w.mean()
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ beta)))
        grad = z.T @ (w * (p - y)) + penalty * beta
        hess = (z * (w * p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return VerdictModel(tuple(names), mean, scale, beta[:-1], float(beta[-1]), 0.0)


# Signs the weights must keep: more evidence of an error never lowers the score (a higher token
# probability, more spans, an unsupported fact, more novel words), a better-supported weakest
# sentence never raises it. Without this the fit learns that unsupported names and role findings
# are mostly false alarms on summaries, and a refined answer that adds a wrong name scores better
# than the one it replaces (standard mode keeps the better-scored answer). Features that share
# what they measure with another (span_mean with peak, support_mean with support_min) are free.
# Cost on the dev parts: mean balanced accuracy over the six sets 0.714 -> 0.707.
RISING = ("peak", "spans", "numbers_dates", "units", "names", "roles", "relations", "moved", "fields", "novel_share")
FALLING = ("support_min",)


def fit_signed(x: np.ndarray, y: np.ndarray, w: np.ndarray, names: Sequence[str]) -> VerdictModel:
    """:func:`fit` with the signs of :data:`RISING` and :data:`FALLING` kept: a feature whose
    weight comes out the wrong way is left out (weight 0) and the rest refitted."""
    kept = list(names)
    while True:
        model = fit(x[:, [names.index(n) for n in kept]], y, w, kept)
        wrong = [n for n, v in zip(kept, model.weights, strict=True)
                 if (n in RISING and v < 0) or (n in FALLING and v > 0)]
        if not wrong:
            break
        kept = [n for n in kept if n not in wrong]
    full = {n: (m, sc, wt) for n, m, sc, wt in zip(kept, model.mean, model.scale, model.weights, strict=True)}
    return VerdictModel(
        tuple(names),
        np.array([full[n][0] if n in full else np.nanmean(x[:, i]) for i, n in enumerate(names)]),
        np.array([full[n][1] if n in full else 1.0 for n in names]),
        np.array([full[n][2] if n in full else 0.0 for n in names]),
        model.bias,
        0.0,
    )


def log_odds(model: VerdictModel, x: np.ndarray) -> np.ndarray:
    x = np.where(np.isnan(x), model.mean, x)
    return np.asarray(((x - model.mean) / model.scale) @ model.weights + model.bias)


def weights(sets: Sequence[str], y: np.ndarray, mixup_weight: float = 0.0) -> np.ndarray:
    """Every set weighs the same (HaluEval's :data:`HALUEVAL_WEIGHT` of that, the generated
    mix-ups' ``mixup_weight``), and within a set both classes do."""
    w = np.zeros(len(y))
    labels = np.asarray(sets)
    for name in set(sets):
        share = HALUEVAL_WEIGHT if name.startswith("halueval") else mixup_weight if name == MIXUPS_TRAIN else 1.0
        for cls in (0, 1):
            mask = (labels == name) & (y == cls)
            if mask.any():
                w[mask] = share / mask.sum()
    return w


def group_of(raw: Raw) -> int:
    """The source an answer belongs to (its context), folded into one of :data:`FOLDS` groups."""
    key = "\n".join(raw.case.item.context).encode()
    return int(hashlib.sha1(key).hexdigest(), 16) % FOLDS


def operating_point(scores: np.ndarray, y: np.ndarray, sets: Sequence[str], families: Sequence[str]) -> float:
    """The lowest log-odds cut at which each family's faithful answers are flagged at most
    :data:`MAX_FALSE_ALARMS` of the time (a family: the RAGTruth dev part, the HaluEval dev fold)."""
    cut = -math.inf
    labels = np.asarray(sets)
    for family in families:
        mask = np.char.startswith(labels.astype(str), family) & (y == 0)
        if mask.sum() < MIN_FAITHFUL:
            continue  # too few to choose on
        faithful = np.sort(scores[mask])
        # flagged = score >= cut; the share above must be <= MAX_FALSE_ALARMS
        allowed = int(math.floor(MAX_FALSE_ALARMS * len(faithful)))
        at = faithful[len(faithful) - allowed - 1] if allowed < len(faithful) else -math.inf
        cut = max(cut, float(np.nextafter(at, math.inf)))
    return cut


def report(
    title: str, scores: np.ndarray, y: np.ndarray, sets: Sequence[str], cut: float
) -> dict[str, dict[str, float]]:
    labels = np.asarray(sets)
    out: dict[str, dict[str, float]] = {}
    print(title)
    print(f"{'set':<32} {'n':>5} {'AUROC':>6} {'bAcc':>6} {'recall':>6} {'FA':>6} {'F1':>6}")
    for name, members in groups(labels).items():
        yy, ss = y[members], scores[members]
        flagged = ss >= cut
        tp, fp = int((flagged & (yy == 1)).sum()), int((flagged & (yy == 0)).sum())
        pos, neg = int((yy == 1).sum()), int((yy == 0).sum())
        recall = tp / pos if pos else 0.0
        fa = fp / neg if neg else 0.0
        precision = tp / (tp + fp) if tp + fp else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        row = {"n": len(members), "auroc": auroc(list(ss), list(yy == 1)),
               "balanced_accuracy": (recall + 1 - fa) / 2, "recall": recall, "false_alarms": fa, "f1": f1}
        out[name] = {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}
        print(f"{name:<32} {row['n']:>5} {row['auroc']:>6.3f} {row['balanced_accuracy']:>6.3f} {recall:>6.3f} "
              f"{fa:>6.3f} {f1:>6.3f}")
    print()
    return out


def mixup_report(raws: Sequence[Raw], kinds: Sequence[str], shifted: np.ndarray, rules: SpanRules,
                 roles: bool) -> dict[str, float]:
    """The bench's tuning sample under the final models (never fitted on): per kind of mix-up the
    share flagged with a span on the changed words, per faithful rewording the share flagged
    (as ``python -m bench.mixups --split tuning`` counts them, but for the spans' explanations)."""
    by_kind: dict[str, list[bool]] = {}
    for raw, kind, z in zip(raws, kinds, shifted, strict=True):
        flagged = bool(z >= 0)
        if raw.case.hallucinated and flagged:
            s = signals(raw, roles=roles)
            _, spans = score_answer(s.probs, s.offsets, raw.case.item.answer, rules)
            (start, end), = raw.case.labels
            flagged = any(sp.start < end and start < sp.end for sp in spans)
        by_kind.setdefault(("wrong: " if raw.case.hallucinated else "faithful: ") + kind, []).append(flagged)
    print("the mix-up bench's tuning sample (dev parts' contexts, never fitted on), at route threshold 0.5")
    out = {kind: round(sum(v) / len(v), 3) for kind, v in by_kind.items()}
    for kind, v in by_kind.items():
        print(f"  {kind:<48} {len(v):>4} {out[kind]:6.1%}")
    wrong = [v for k, v in out.items() if k.startswith("wrong")]
    faithful = [v for k, v in out.items() if k.startswith("faithful")]
    print(f"  lowest recall {min(wrong):.1%}, mean {np.mean(wrong):.1%}; most faithful flagged "
          f"{max(faithful):.1%}, mean {np.mean(faithful):.1%}\n")
    return out


def _digest(raw: Raw) -> str:
    item = raw.case.item
    return hashlib.sha1("\x00".join([*item.context, item.question or "", item.answer]).encode()).hexdigest()[:16]


def _command(args: argparse.Namespace) -> str:
    """The command that refits this verdict: the options that shape the fit, as given."""
    parts = ["python -m training.verdict"]
    if args.items != ITEMS or args.summarization_items != SUMMARIZATION_ITEMS:
        parts += ["--items", str(args.items), "--summarization-items", str(args.summarization_items)]
    if args.no_train_part:
        parts.append("--no-train-part")
    if args.report_only:
        parts += ["--report-only", *args.report_only]
    if args.human_dev is not None:
        parts += ["--human-dev", args.human_dev.as_posix()]
    if args.support:
        parts.append("--support")
    if args.check_features:
        parts.append("--check-features")
    if args.leave_out:
        parts += ["--leave-out", *args.leave_out]
    if args.mixups != MIXUPS or args.mixup_weight != MIXUP_WEIGHT:
        parts += ["--mixups", str(args.mixups), "--mixup-weight", f"{args.mixup_weight:g}"]
    return " ".join([*parts, "--write"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.verdict", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    parser.add_argument("--halueval", type=Path, default=halueval.DEFAULT_DIR)
    parser.add_argument("--ragtruth", type=Path, default=ragtruth.DEFAULT_DIR)
    parser.add_argument("--items", type=int, default=ITEMS, help="HaluEval dev QA and dialogue items (x2 answers)")
    parser.add_argument("--summarization-items", type=int, default=SUMMARIZATION_ITEMS)
    parser.add_argument("--no-train-part", action="store_true", help="fit on the dev parts only")
    parser.add_argument("--report-only", nargs="*", default=[], metavar="SET",
                        help="sets (by name prefix, e.g. quintd) reported but not fitted on")
    parser.add_argument("--human-dev", type=Path, default=None,
                        help="a training mix (python -m training.corpus.llm_mix --out DIR): also fit and report "
                             "on its human-labelled sets' dev parts")
    parser.add_argument("--support", action="store_true",
                        help="also fit the embedder's support features (serving then runs the embedder pass)")
    parser.add_argument("--mixups", type=int, default=MIXUPS, metavar="N",
                        help="fit on N generated mix-ups and N faithful twins of each kind from the train parts' "
                             "contexts (training.corpus.mixups) and report the bench's tuning sample (0: neither)")
    parser.add_argument("--mixup-weight", type=float, default=MIXUP_WEIGHT,
                        help="the generated mix-ups' weight in the fit beside a real set's 1.0")
    parser.add_argument("--check-features", action="store_true",
                        help="also fit the moved-term and record-field counts (facts.Finding.check) as features of "
                             "their own; left out by default: on the dev parts they added nothing beside the mix-ups")
    parser.add_argument("--cache", type=Path, default=CACHE_DIR,
                        help="where the model's scores of each set are cached (keyed by the graph and the set)")
    parser.add_argument("--leave-out", nargs="*", default=[], metavar="FEATURE", choices=FEATURES,
                        help="features the models leave out (to measure what one adds)")
    parser.add_argument("--save-folds", type=Path, default=None,
                        help="store the fit's fold models here (.json), to score a later fact check with --folds")
    parser.add_argument("--folds", type=Path, default=None,
                        help=f"score the dev parts with these saved fold models instead of fitting them "
                             f"({SHIPPED_FOLDS}: the shipped fit on this build's fact check, for "
                             "python -m training.compare)")
    parser.add_argument("--write", action="store_true", help="store the verdict in the model's manifest.json")
    parser.add_argument("--save-oof", type=Path, default=None,
                        help="store the dev answers' out-of-fold scores here (.npz) for python -m training.compare")
    args = parser.parse_args(argv)
    if args.folds is not None and args.write:
        parser.error("--folds scores saved fold models; it writes no verdict (drop --write)")
    if not ragtruth.available(args.ragtruth):
        parser.error(f"RAGTruth files not in {args.ragtruth}: run python -m training.corpus.ragtruth --faithjudge DIR")

    sets = development_sets(halueval.fetch(args.halueval), args.ragtruth, args.items, args.summarization_items,
                            args.human_dev)
    tuning_kinds: list[str] = []
    if args.mixups:
        generated, tuning_kinds = mixup_sets(args.ragtruth, halueval.fetch(args.halueval), args.mixups)
        sets.update(generated)
    engine = create_detector(DetectorSettings(model_dir=args.model, provider="cpu"))
    assert isinstance(engine, DetectorEngine), "the verdict is fitted on in-process token scores (backend: onnx)"
    raw = load_or_score(engine, sets, with_support=args.support, cache=args.cache)
    rules = engine.rules
    answers = [(name, r) for name, rs in raw.items() for r in rs]
    labels = np.array([name for name, _ in answers])
    # Without --support the models leave the embedder's features out: on the dev parts they
    # added nothing (training/README.md) and serving would pay an embedder pass per answer.
    names = [n for n in FEATURES if (args.support or n not in SUPPORT_FEATURES)
             and (args.check_features or n not in CHECK_FEATURES) and n not in args.leave_out]
    rows = feature_rows([r for _, r in answers], rules, engine.role_checks)
    x = design(rows, names)
    y = np.array([float(r.case.hallucinated) for _, r in answers])
    w = weights(list(labels), y, args.mixup_weight)
    is_tuning = labels == MIXUPS_TUNING  # reported under the final models, never fitted or chosen on
    is_dev = np.array([not name.endswith("(train)") for name in labels]) & ~is_tuning
    fitting = (np.ones(len(y), dtype=bool) if not args.no_train_part else is_dev) & ~is_tuning
    for name in args.report_only:  # scored and reported out-of-fold, never fitted on
        fitting &= ~np.char.startswith(labels.astype(str), name)
    groups = np.array([group_of(r) for _, r in answers])
    shapes = np.array([r.shape for _, r in answers])

    # Per shape: out-of-fold log-odds for every dev answer, the operating point chosen on them,
    # then the final model fitted on all of that shape's answers. ``shifted`` is the served
    # score's log-odds (0 at the operating point).
    shifted = np.full(len(y), np.nan)
    models: dict[str, VerdictModel] = {}
    fold_models: dict[str, list[VerdictModel]] = {}
    frozen = load_folds(args.folds) if args.folds is not None else None
    for shape in SHAPES:
        mine = shapes == shape
        for g in range(FOLDS):
            held = mine & is_dev & (groups == g)
            train = mine & fitting & ~held
            # --folds: another fit's fold models (fitted on the features of their day) score
            # this build's features, so a refit is compared with the shipped fit on the same
            # fact check; the operating point below is re-chosen on them by the same rule.
            model = frozen[shape][g] if frozen is not None else fit_signed(x[train], y[train], w[train], names)
            fold_models.setdefault(shape, []).append(model)
            shifted[held] = log_odds(model, design([rows[i] for i in np.flatnonzero(held)], model.names))
        dev = mine & is_dev
        families = tuple(f for f in ("ragtruth", "halueval") if np.char.startswith(labels[dev].astype(str), f).any())
        cut = operating_point(shifted[dev], y[dev], list(labels[dev]), families)
        shifted[dev] -= cut
        final = fit_signed(x[mine & fitting], y[mine & fitting], w[mine & fitting], names)
        models[shape] = VerdictModel(final.names, final.mean, final.scale, final.weights, final.bias, cut)
        shifted[mine & is_tuning] = log_odds(final, x[mine & is_tuning]) - cut
        print(f"{shape}: fitted on {int((mine & fitting).sum())} answers, chosen on {int(dev.sum())} "
              f"(operating point at log-odds {cut:.3f})")
        print("  weights (standardised): " + ", ".join(
            f"{n} {v:+.2f}" for n, v in zip(names, final.weights, strict=True)))
    print(f"\ntoken rules: {rules.aggregation} tau {rules.token_threshold} min {rules.min_span_length}; "
          f"fitted on {'the train part and ' if not args.no_train_part else ''}the dev parts"
          f"{' (with ' + ', '.join(HUMAN_DEV_SETS) + ')' if args.human_dev else ''}\n")
    at_choice = report("dev parts, out-of-fold, at the chosen operating points (route threshold 0.5)",
                       shifted[is_dev], y[is_dev], list(labels[is_dev]), 0.0)
    folds_json = json.dumps({k: [m.to_json() for m in v] for k, v in fold_models.items()}, indent=1) + "\n"
    if args.save_folds is not None:
        args.save_folds.write_text(folds_json)
        print(f"fold models -> {args.save_folds}\n")
    if args.save_oof is not None:
        dev_answers = [r for (_, r), dev in zip(answers, is_dev, strict=True) if dev]
        OutOfFold(labels[is_dev], y[is_dev] == 1, shifted[is_dev], np.array([_digest(r) for r in dev_answers])).save(
            args.save_oof)
        print(f"out-of-fold scores -> {args.save_oof}\n")
    mixups = mixup_report([r for (_, r), t in zip(answers, is_tuning, strict=True) if t], tuning_kinds,
                          shifted[is_tuning], rules, engine.role_checks) if tuning_kinds else {}
    print("route threshold -> faithful answers flagged / recall (dev parts, out-of-fold)")
    trade: dict[str, dict[str, float]] = {}
    for t in ROUTE_THRESHOLDS:
        at = math.log(t / (1 - t))
        row = {}
        for family in ("ragtruth", "halueval"):
            mask = is_dev & np.char.startswith(labels.astype(str), family)
            flagged = shifted[mask] >= at
            row[f"{family} faithful flagged"] = round(float(flagged[y[mask] == 0].mean()), 3)
            row[f"{family} recall"] = round(float(flagged[y[mask] == 1].mean()), 3)
        trade[f"{t:g}"] = row
        print(f"  {t:.1f}  " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()))
    if args.write:
        path = resolve_model_dir(args.model) / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["verdict"] = {
            "models": {shape: model.to_json() for shape, model in models.items()},
            "token_rules": {"token_threshold": rules.token_threshold, "aggregation": rules.aggregation,
                            "min_span_length": rules.min_span_length},
            "operating_point": f"per task shape: at most {MAX_FALSE_ALARMS:.0%} of faithful answers flagged on "
                               "the RAGTruth dev part and on the HaluEval dev fold (out-of-fold), at route "
                               "threshold 0.5",
            "data": f"fit: RAGTruth odd source_id ({'dev part' if args.no_train_part else 'train and dev parts'}) "
                    "+ HaluEval dev fold (i % 10 == 1)"
                    + (f" + the dev parts of {', '.join(HUMAN_DEV_SETS)}" if args.human_dev else "")
                    + (f" + {args.mixups} generated mix-ups and faithful twins per kind from the train parts' "
                       f"contexts (weight {args.mixup_weight:g})" if args.mixups else "")
                    + "; chosen on the dev parts' out-of-fold predictions",
            "command": _command(args),
            "at_choice": at_choice,
            **({"mixups_tuning": mixups} if mixups else {}),
            "route_thresholds": trade,
        }
        path.write_text(json.dumps(manifest, indent=2) + "\n")
        if args.model is None:
            SHIPPED_FOLDS.write_text(folds_json)
        # The refitted models' log-odds are not the ones the old probability map was fitted on:
        # the block is dropped (the model then fails to load naming it) until it is refitted.
        print(f"verdict -> {path}; now fit its probability map: python -m training.calibrate_tasks --write")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
