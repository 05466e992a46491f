"""The short-answer fit through the RAG frameworks' templates: does it read the same question and
context from a framework's prompt as from the fields?

The one-name answers of the mix-up bench's tuning half (HaluEval QA dev fold: wrong names and
right names, :mod:`bench.mixups`) are written into each built-in framework template that has a
context and a question slot, as the framework renders it; the gateway's reader
(:func:`truthlens.gateway.apis.context.reading.recognise`) reads each back, and the fact check
runs on what it read. Per template: how many were read, and how many carry the same findings and
the same names read as answered (:mod:`truthlens.detector.facts.short_answers.answer_fit`) as the
same answer checked on the fields. In process; no model, no network.

    python -m bench.answer_fit_shapes [--per-kind 200]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bench.mixups import generate
from truthlens.detector.facts import check_facts
from truthlens.gateway.apis.context.builtin import TEMPLATES
from truthlens.gateway.apis.context.reading import FRAMEWORKS, recognise


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=200)
    args = parser.parse_args(argv)
    cases = [c for c in generate("tuning", args.per_kind) if c.kind.startswith("one-name")]
    print(f"{len(cases)} one-name answers (wrong and right) of the tuning half")
    for template in TEMPLATES:
        if "{question}" not in template.text or "{context}" not in template.text:
            continue
        read = same = 0
        for c in cases:
            text = template.text.replace("{context}", "\n\n".join(c.context)).replace("{question}", c.question)
            reading = recognise([("user", text)], FRAMEWORKS)
            if reading is None:
                continue
            read += 1
            question = c.question if reading.question is None else reading.question.strip()
            mine = check_facts(c.answer, reading.passages, question)
            fields = check_facts(c.answer, c.context, c.question)
            same += (mine.findings, mine.answered) == (fields.findings, fields.answered)
        print(f"{template.name:28s} read {read}/{len(cases)}, same findings and answered names as the fields: "
              f"{same}/{read}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
