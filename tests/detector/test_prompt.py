"""The detector prompt equals LettuceDetect's English QA template byte for byte.

Nothing is scripted: the reference is the template file shipped in the installed
``lettucedetect`` package, read without importing the package (which would load torch).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from string import Template

import pytest

from truthlens.detector.prompt import build_prompt, passage_line, prompt_head, prompt_tail


def _reference(context: list[str], question: str) -> str:
    spec = importlib.util.find_spec("lettucedetect")
    if spec is None or spec.origin is None:
        pytest.skip("lettucedetect is not installed")
    path = Path(spec.origin).parent / "prompts" / "qa_prompt_en.txt"
    block = "\n".join(f"passage {i + 1}: {p}" for i, p in enumerate(context))
    return Template(path.read_text(encoding="utf-8")).substitute(
        question=question, num_passages=len(context), context=block
    )


@pytest.mark.parametrize(
    ("context", "question"),
    [
        (["Paris is the capital of France.", "It has 2.1 million inhabitants."], "What is the capital?"),
        ([], "No passages?"),
        (["$dollar {brace} ${template}", "line\nbreak", "北京 😀"], "{q} $x?"),
    ],
)
def test_matches_lettucedetect_template(context: list[str], question: str) -> None:
    assert build_prompt(context, question) == _reference(context, question)


def test_pieces_compose_the_prompt() -> None:
    context = ["a", "b"]
    expected = prompt_head("q", 2) + passage_line(0, "a") + "\n" + passage_line(1, "b") + prompt_tail()
    assert build_prompt(context, "q") == expected
    assert build_prompt(context, "q").endswith("output:")
