"""The figures the docs quote from the shipped model's manifest, rendered from it: the route
threshold table and the development figures at the default threshold (``docs/detector.md``,
between ``<!-- figures:NAME -->`` and ``<!-- /figures -->``; both from the probability map's
block, ``verdict.probability``), and the example answer's ``x-truthlens-score`` (README,
quickstart, clients) as the shipped detector scores it. ``tests/deploy/test_doc_figures.py``
holds the docs equal to this rendering, so a refit that changes the manifest fails until the
docs are rewritten (``python -m training.calibrate_tasks --write`` runs this after it writes):

    python -m bench.doc_figures [--write]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from truthlens.detector import cli as detect_cli
from truthlens.gateway.policy.thresholds import DEFAULT_THRESHOLD as DEFAULT

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "src" / "truthlens" / "detector" / "default_model" / "manifest.json"
DETECTOR_DOC = ROOT / "docs" / "detector.md"
DEFAULT_THRESHOLD = f"{DEFAULT:g}"  # the routes' default, as the block's keys write it


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def threshold_table(verdict: Mapping[str, Any]) -> str:
    """Per route threshold, faithful dev answers flagged and recall (the served probability)."""
    lines = ["| route `threshold` | RAGTruth dev: faithful flagged | RAGTruth dev: recall | "
             "HaluEval dev: faithful flagged | HaluEval dev: recall |", "|---|---|---|---|---|"]
    for threshold, row in sorted(verdict["probability"]["route_thresholds"].items(), key=lambda kv: float(kv[0])):
        cells = [_pct(row[k]) for k in ("ragtruth faithful flagged", "ragtruth recall",
                                        "halueval faithful flagged", "halueval recall")]
        if threshold == DEFAULT_THRESHOLD:
            lines.append(f"| **{threshold} (default)** | " + " | ".join(f"**{c}**" for c in cells) + " |")
        else:
            lines.append(f"| {threshold} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def dev_figures(verdict: Mapping[str, Any]) -> str:
    """The development figures at the default threshold, one sentence."""
    at = verdict["probability"]["at_default"]

    def ba(name: str, auroc: bool = True) -> str:
        m = at[name]
        return f"{m['balanced_accuracy']:.3f}" + (f" (AUROC {m['auroc']:.3f})" if auroc else "")

    human = f"Quintd-1 {ba('quintd (dev)')}, XSum {ba('xsum_faith (dev)')}; " if "quintd (dev)" in at else ""
    return (f"At {DEFAULT_THRESHOLD} on the dev parts (in-sample for the map): RAGTruth QA balanced accuracy "
            f"{ba('ragtruth qa (dev)')}, summaries {ba('ragtruth summary (dev)')}, data-to-text "
            f"{ba('ragtruth data2txt (dev)')}; HaluEval QA {ba('halueval qa (dev)', False)}, summarization "
            f"{ba('halueval summarization (dev)', False)}, dialogue {ba('halueval dialogue (dev)', False)}; "
            f"{human}{_pct(at['halueval qa faithful twins (dev)']['false_alarms'])} of HaluEval's faithful "
            "full-sentence QA twins flagged.")


FIGURES: dict[str, Callable[[Mapping[str, Any]], str]] = {"thresholds": threshold_table, "dev": dev_figures}


# The docs' example (README, quickstart, clients): the demo upstream's answer to "Who designed the
# Eiffel Tower?" (src/truthlens/starter/demo_script.yaml) checked against the examples' context.
EXAMPLE = {"context": ["The Eiffel Tower was designed by the engineering company of Gustave Eiffel."],
           "question": "Who designed the Eiffel Tower?",
           "answer": "The Eiffel Tower was designed by Leonardo da Vinci in 1502 and is made of solid gold."}
EXAMPLE_DOCS = (ROOT / "README.md", ROOT / "docs" / "quickstart.md", ROOT / "docs" / "clients.md")
EXAMPLE_SCORE = re.compile(r"(x-truthlens-score: )([0-9.]+)")
EXAMPLE_TOLERANCE = 0.005  # the shipped int8 model's score, across CPUs


def example_score() -> float:
    """The shipped detector's score of the docs' example (as ``truthlens detect`` gives it)."""
    with tempfile.TemporaryDirectory(prefix="doc-figures-") as tmp:
        path = Path(tmp) / "example.jsonl"
        path.write_text(json.dumps(EXAMPLE) + "\n", encoding="utf-8")
        out = io.StringIO()
        if detect_cli.main(["--input", str(path), "--provider", "cpu"], stdout=out) != 0:
            raise RuntimeError("truthlens detect failed on the docs' example")
    return float(json.loads(out.getvalue())["score"])


def example_scores_in_docs() -> dict[Path, list[float]]:
    return {p: [float(m.group(2)) for m in EXAMPLE_SCORE.finditer(p.read_text(encoding="utf-8"))]
            for p in EXAMPLE_DOCS}


def block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- figures:{name} [^>]*-->\n)(.*?)(\n<!-- /figures -->)", re.DOTALL)


def rendered() -> dict[str, str]:
    verdict = json.loads(MANIFEST.read_text(encoding="utf-8"))["verdict"]
    return {name: render(verdict) for name, render in FIGURES.items()}


def in_doc(text: str) -> dict[str, str | None]:
    """Each figure block as the doc has it (None: no such block)."""
    return {name: (m.group(2) if (m := block(name).search(text)) else None) for name in FIGURES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.doc_figures", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the blocks in {DETECTOR_DOC.name}")
    args = parser.parse_args(argv)
    figures = rendered()
    if not args.write:
        for name, text in figures.items():
            print(f"<!-- figures:{name} -->\n{text}\n")
        return 0
    text = DETECTOR_DOC.read_text(encoding="utf-8")
    for name, figure in figures.items():
        def filled(m: re.Match[str], figure: str = figure) -> str:
            return m.group(1) + figure + m.group(3)

        text, n = block(name).subn(filled, text)
        if n != 1:
            parser.error(f"{DETECTOR_DOC.name} has {n} figures:{name} blocks (expected 1)")
    DETECTOR_DOC.write_text(text, encoding="utf-8")
    score = f"{example_score():.4f}"
    for path in EXAMPLE_DOCS:
        doc = path.read_text(encoding="utf-8")
        path.write_text(EXAMPLE_SCORE.sub(lambda m: m.group(1) + score, doc), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
