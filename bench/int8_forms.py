"""Which int8 form keeps the float model's verdicts: dynamic int8 variants against fp32 on the dev parts.

Builds int8 graphs from a fused fp32 graph of the shipped checkpoint (``--fp32``: a model
directory, e.g. ``truthlens export --optimize-onnx`` of ``training.recover``'s float export),
each with ONNX Runtime's dynamic quantiser, keeping some parts in fp32:

- ``head``: the classifier head (384 x 2) in fp32;
- ``emb-head``: the embedding tables too (the fused ``EmbedLayerNormalization``);
- ``last-emb-head``: the last layer's attention and matmuls too;
- ``ffn-out-emb-head``: every layer's second feed-forward matmul (1536 → 384, whose input, the
  GELU's output, has the widest range of any activation) too.

Then runs the whole check (``DetectorEngine.detect`` at threshold 0.5, one run at a time on every
core: a verdict does not depend on how runs share the cores)
with the shipped graph, fp32 and each variant on every answer of RAGTruth's dev part (QA,
summary, data2txt; odd ``source_id``), the models taking turns per answer, and prints each
one's verdict agreement with fp32 (per task and pooled), its F1 against the human labels and
its mean check time (a shared machine: compare within the run). The variants are written to
``--out`` (one model directory each: the graph, the shipped manifest and tokenizer).

    python -m bench.int8_forms --fp32 DIR --out DIR [--n-per-task 1000] [--only NAME,...] [--log FILE]
    python -m bench.int8_forms --table-from FILE
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import shutil
import statistics
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DEFAULT_MODEL = Path("src/truthlens/detector/default_model")
TASKS: tuple[Literal["qa", "summary", "data2txt"], ...] = ("qa", "summary", "data2txt")
HEAD = "/model/classifier/MatMul"


def layer_nodes(layer: int) -> list[str]:
    prefix = f"/model/bert/encoder/layer.{layer}"
    return [f"Attention_{layer}", f"{prefix}/attention/output/dense/MatMul",
            f"{prefix}/intermediate/dense/MatMul", f"{prefix}/output/dense/MatMul"]


VARIANTS: dict[str, list[str]] = {
    "head": [HEAD],
    "emb-head": [HEAD, "EmbedLayerNormalization_0"],
    "last-emb-head": [HEAD, "EmbedLayerNormalization_0", *layer_nodes(5)],
    "ffn-out-emb-head": [HEAD, "EmbedLayerNormalization_0",
                         *(f"/model/bert/encoder/layer.{i}/output/dense/MatMul" for i in range(6))],
}


def build(fp32: Path, out: Path, name: str, keep_fp32: list[str]) -> Path:
    """``fp32``'s graph dynamically quantised (per-channel int8 weights) but for ``keep_fp32``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = out / name
    if (target / "model.onnx").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(
        str(fp32 / "model.onnx"), str(target / "model.onnx"), per_channel=True, weight_type=QuantType.QInt8,
        nodes_to_exclude=keep_fp32, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    for file in ("manifest.json", "tokenizer.json"):
        shutil.copyfile(DEFAULT_MODEL / file, target / file)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["quantization"] = f"int8-dynamic-per-channel, fp32: {', '.join(keep_fp32)}"
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return target


@dataclass
class Result:
    task: str
    label: bool
    detected: bool
    ms: float


async def run(args: argparse.Namespace) -> None:
    from training.corpus import ragtruth
    from truthlens.detector.backends.factory import create_detector
    from truthlens.detector.types import DetectionInput, DetectorSettings

    if args.fp32 is None or args.out is None:
        raise SystemExit("--fp32 and --out are needed to build and run the variants")
    wanted = {v for v in args.only.split(",") if v}
    dirs = {"shipped": DEFAULT_MODEL, "fp32": args.fp32}
    for name, keep in VARIANTS.items():
        if not wanted or name in wanted:
            dirs[name] = build(args.fp32, args.out, name, keep)
    engines = {name: create_detector(DetectorSettings(provider="cpu", model_dir=str(d))) for name, d in dirs.items()}
    per_task = [[(task, r) for k, r in enumerate(ragtruth.responses(task, ("dev",))) if k < args.n_per_task]
                for task in TASKS]
    # The tasks' answers taken in turn, so a run stopped early still covers every task.
    answers = [a for group in itertools.zip_longest(*per_task) for a in group if a is not None]
    results: dict[str, list[Result]] = {name: [] for name in engines}
    names = list(engines)
    started = time.perf_counter()
    with ExitStack() as stack:
        log = stack.enter_context(args.log.open("w", encoding="utf-8")) if args.log else None
        for i, (task, r) in enumerate(answers):
            item = DetectionInput(r.context, r.question, r.answer)
            for name in names[i % len(names):] + names[: i % len(names)]:  # turns rotate per answer
                t = time.perf_counter()
                d = await engines[name].detect(item, threshold=0.5)
                res = Result(task, bool(r.spans), d.status == "detected", (time.perf_counter() - t) * 1e3)
                results[name].append(res)
                if log is not None:
                    log.write(json.dumps({"model": name, "answer": i, **dataclasses.asdict(res)}) + "\n")
                    log.flush()
    for engine in engines.values():
        await engine.close()
    print(f"RAGTruth dev part ({len(answers)} answers: {', '.join(TASKS)}), whole check at threshold 0.5, "
          f"{time.perf_counter() - started:.0f} s")
    print_table(results)


def print_table(results: dict[str, list[Result]]) -> None:
    print(f"{'model':<18} {'all':>7} " + " ".join(f"{t:>8}" for t in TASKS) + f" {'F1':>6} {'flagged':>7} {'ms':>7}")
    ref = results["fp32"]
    for name, res in results.items():
        agree = [a.detected == b.detected for a, b in zip(res, ref, strict=True)]
        per_task = []
        for task in TASKS:
            part = [ok for ok, a in zip(agree, res, strict=True) if a.task == task]
            per_task.append(f"{sum(part) / max(1, len(part)):8.1%}")
        tp = sum(a.detected and a.label for a in res)
        fp = sum(a.detected and not a.label for a in res)
        fn = sum(a.label and not a.detected for a in res)
        f1 = 2 * tp / max(1, 2 * tp + fp + fn)
        print(f"{name:<18} {sum(agree) / len(agree):7.1%} {' '.join(per_task)} {f1:6.3f} "
              f"{tp + fp:7d} {statistics.fmean(a.ms for a in res):7.1f}")
    print("(agreement: verdicts as fp32's; F1 of the answer verdict against the human labels; ms: mean whole check)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fp32", type=Path, help="model directory of the fused fp32 graph")
    parser.add_argument("--out", type=Path, help="where the int8 variants are written")
    parser.add_argument("--n-per-task", type=int, default=1000)
    parser.add_argument("--only", default="", help="variants to build and run (comma-separated)")
    parser.add_argument("--log", type=Path, default=None, help="JSONL of every check's result, written as it goes")
    parser.add_argument("--table-from", type=Path, default=None,
                        help="print the table of a --log (a run stopped early: the answers every model checked)")
    args = parser.parse_args()
    if args.table_from is not None:
        print_table(from_log(args.table_from))
        return
    asyncio.run(run(args))


def from_log(path: Path) -> dict[str, list[Result]]:
    """A --log's results, cut to the answers that every model has checked."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_model: dict[str, dict[int, Result]] = {}
    for row in rows:
        result = Result(row["task"], row["label"], row["detected"], row["ms"])
        by_model.setdefault(row["model"], {})[row["answer"]] = result
    done = sorted(set.intersection(*(set(m) for m in by_model.values())))
    print(f"{len(done)} answers checked by every model ({path})")
    return {name: [found[i] for i in done] for name, found in by_model.items()}


if __name__ == "__main__":
    main()
