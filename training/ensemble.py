"""Make an ensemble model directory: an exported model that runs with other models beside it.

The directory is a copy of ``--model`` (an exported detector directory: ``model.onnx``,
``tokenizer.json``, ``manifest.json``) whose manifest names the members (``ensemble``; serving
joins their token probabilities per character, :mod:`truthlens.detector.scoring.ensemble`). A member
given as a path is copied in beside the model, so the directory stays whole wherever it is
installed; ``builtin`` (the shipped model) is referred to, not copied. The token rules start
as the first member's calibration (``training.calibrate`` may choose again); the learned verdict is
left out, since it must be fitted on the joined probabilities:

    python -m training.ensemble --model training/output/mpnet-full-int8bw --member builtin \\
        --out training/output/ensemble-mpnet
    python -m training.verdict --model training/output/ensemble-mpnet --human-dev training/output/llm5 --write
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from truthlens.detector.manifest import load_manifest, resolve_model_dir

FILES = ("model.onnx", "tokenizer.json", "manifest.json")


def make_ensemble(model: Path, members: Sequence[str], out: Path) -> Path:
    """Write ``out``: ``model``'s files with ``members`` beside it; returns the manifest's path."""
    if not members:
        raise ValueError("an ensemble needs at least one member")
    own = load_manifest(model)
    if own.ensemble:
        raise ValueError(f"{model} is an ensemble already")
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy2(model / name, out / name)
    named: list[str] = []
    for i, member in enumerate(members):
        if member == "builtin":
            named.append(member)
            continue
        place = f"member-{i + 1}"
        (out / place).mkdir(exist_ok=True)
        for name in FILES:
            shutil.copy2(Path(member) / name, out / place / name)
        named.append(place)
    raw = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    first = json.loads((resolve_model_dir(members[0]) / "manifest.json").read_text(encoding="utf-8"))
    raw["ensemble"] = named
    raw.pop("verdict", None)
    if "calibration" in first:
        raw["calibration"] = {**first["calibration"], "from": f"the token rules of member {members[0]!r}"}
    (out / "manifest.json").write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    load_manifest(out)  # what serving will read: fail here, not at a gateway's start
    return out / "manifest.json"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.ensemble", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="the exported model directory to copy")
    parser.add_argument("--member", nargs="+", required=True, help="member model directories, or builtin")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    print(make_ensemble(args.model, args.member, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
