"""The benchmarks' charts as PNG files for the docs site (matplotlib, the ``bench`` extra only).

The charts, each drawn from what a bench measured:

- **quality per task**: balanced accuracy per evaluation set and configuration, from
  ``python -m bench.detector_quality``'s two tables (its ``--chart`` option, or a saved copy of
  its output read back here);
- **latency by input length**: a check's milliseconds against context tokens, per chunk
  aggregation, from ``python -m bench.detector_length_scaling --chart``;
- **reliability diagram**: the served probability against the observed share of hallucinated
  answers per task, drawn by ``python -m bench.calibration``.

    python -m bench.charts quality SAVED_OUTPUT.txt --out docs/img/quality-per-task.png [--title ...]

matplotlib is imported when a chart is drawn, so the benches run without it when no chart is asked for.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# The evaluation sets a quality chart shows, as (table column prefix, label) per table.
RAGTRUTH_TASKS = (("qa", "RAGTruth QA"), ("summary", "RAGTruth summary"), ("data2txt", "RAGTruth data-to-text"))
HALUEVAL_TASKS = (("qa", "HaluEval QA"), ("summarization", "HaluEval summarization"), ("dialogue", "HaluEval dialogue"))
COLUMN_GAP = re.compile(r"\s{2,}")


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only backend (no display on a server or in CI)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def parse_tables(text: str) -> list[dict[str, dict[str, str]]]:
    """The tables ``bench.detector_quality`` prints (header row starting ``configuration``, one row
    per configuration, columns two or more spaces apart), each as {configuration: {column: value}}."""
    tables: list[dict[str, dict[str, str]]] = []
    columns: list[str] | None = None
    for line in text.splitlines():
        cells = COLUMN_GAP.split(line.strip())
        if cells and cells[0] == "configuration":
            columns = cells[1:]
            tables.append({})
        elif columns is not None and line.strip() and len(cells) == len(columns) + 1:
            tables[-1][cells[0]] = dict(zip(columns, cells[1:], strict=True))
        else:
            columns = None
    return tables


def balanced_accuracy_by_task(tables: Sequence[Mapping[str, Mapping[str, str]]]) -> dict[str, dict[str, float]]:
    """{configuration: {set label: balanced accuracy}} from the RAGTruth table (its ``BA`` columns)
    and the HaluEval table (its ``acc`` columns: HaluEval's sets are balanced, so accuracy is the
    balanced accuracy). Rows without a number (published anchors) are left out."""
    ragtruth, halueval = tables[0], tables[1]
    out: dict[str, dict[str, float]] = {}
    for name, row in ragtruth.items():
        values = {label: row.get(f"{col} BA", "-") for col, label in RAGTRUTH_TASKS}
        values |= {label: halueval.get(name, {}).get(f"{col} acc", "-") for col, label in HALUEVAL_TASKS}
        if all(v not in ("-", "") for v in values.values()):
            out[name] = {label: float(v) for label, v in values.items()}
    return out


def quality_per_task(scores: Mapping[str, Mapping[str, float]], out: Path, title: str) -> Path:
    """Grouped bars: balanced accuracy per evaluation set, one bar per configuration."""
    plt = _pyplot()
    labels = [label for _, label in (*RAGTRUTH_TASKS, *HALUEVAL_TASKS)]
    width = 0.8 / max(len(scores), 1)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for i, (name, by_set) in enumerate(scores.items()):
        xs = [x + (i - (len(scores) - 1) / 2) * width for x in range(len(labels))]
        bars = ax.bar(xs, [by_set[label] for label in labels], width, label=name)
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
    ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
    ax.text(len(labels) - 0.5, 0.51, "chance", color="grey", fontsize=8, ha="right")
    ax.set_xticks(range(len(labels)), [label.replace(" ", "\n", 1) for label in labels], fontsize=8)
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("balanced accuracy")
    ax.set_title(textwrap.fill(title, 100), fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def latency_by_length(panels: Mapping[str, Mapping[str, Sequence[tuple[int, float]]]], out: Path, title: str) -> Path:
    """Side-by-side panels (panel title → its lines), each line a label → [(context tokens, ms)],
    on a log2 token axis: e.g. wall-clock ms and CPU ms per check, one line per chunk aggregation."""
    plt = _pyplot()
    # One colour per configuration (the label before ":") in every panel; a first check dashed.
    names = list(dict.fromkeys(label.split(":")[0] for series in panels.values() for label in series))
    colours = {name: f"C{i}" for i, name in enumerate(names)}
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.4), squeeze=False)
    for ax, (panel, series) in zip(axes[0], panels.items(), strict=True):
        for label, points in series.items():
            first = "first" in label
            ax.plot([t for t, _ in points], [ms for _, ms in points], marker="o" if first else "s",
                    linestyle="--" if first else "-", color=colours[label.split(":")[0]], label=label)
        tokens = sorted({t for points in series.values() for t, _ in points})
        ax.set_xscale("log", base=2)
        ax.set_xticks(tokens, [f"{t:,}" for t in tokens], fontsize=8, rotation=30)
        ax.minorticks_off()
        ax.set_xlabel("context tokens")
        ax.set_ylabel(panel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(textwrap.fill(title, 110), fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def reliability_diagram(
    panels: Mapping[str, Mapping[str, Sequence[tuple[float, float, int]]]], out: Path, title: str
) -> Path:
    """Side-by-side reliability diagrams (panel title → its lines), each line a label → [(mean
    predicted probability, observed rate, answers)] per bin; the diagonal is perfect calibration
    and a marker's area grows with its bin's answers (``python -m bench.calibration``)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4.8), squeeze=False)
    for ax, (panel, series) in zip(axes[0], panels.items(), strict=True):
        ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--", label="calibrated")
        for i, (label, bins) in enumerate(series.items()):
            pooled = label.startswith("pooled")
            ax.plot([m for m, _, _ in bins], [r for _, r, _ in bins], color="black" if pooled else f"C{i}",
                    linewidth=2.0 if pooled else 1.2, marker="o", markersize=3, label=label)
            ax.scatter([m for m, _, _ in bins], [r for _, r, _ in bins], s=[4 + n for _, _, n in bins],
                       color="black" if pooled else f"C{i}", alpha=0.35)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("served score (P(hallucinated)), bin mean")
        ax.set_ylabel("share hallucinated")
        ax.set_title(panel, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(textwrap.fill(title, 110), fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.charts", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="chart", required=True)
    quality = sub.add_parser("quality", help="quality per task from a saved bench.detector_quality output")
    quality.add_argument("saved", type=Path, help="the text bench.detector_quality printed")
    quality.add_argument("--out", type=Path, required=True, help="the PNG to write")
    quality.add_argument("--title", default="Detector quality per evaluation set (bench.detector_quality)")
    args = parser.parse_args(argv)
    scores = balanced_accuracy_by_task(parse_tables(args.saved.read_text(encoding="utf-8")))
    if not scores:
        parser.error(f"{args.saved}: no configuration with every set's balanced accuracy")
    print(quality_per_task(scores, args.out, args.title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
