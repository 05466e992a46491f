"""training.corpus.mixups: the bench's mix-up rules over the train parts' contexts only.

The data files are written here in RAGTruth's and HaluEval's own formats (a few sources in every
fold), so the test sees which fold each generated answer came from; the rules are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from training.corpus import halueval, ragtruth
from training.corpus.mixups import LABEL_KINDS, as_examples, as_scored, generate
from training.corpus.splits import read_jsonl, write_jsonl

_FIRST = ("Anna", "Boris", "Clara", "David", "Elena", "Felix", "Greta", "Hugo", "Irene", "Jonas")
_LAST = ("Berg", "Castro", "Dahl", "Engel", "Fischer", "Gomez", "Horvat", "Ivanov", "Jansen", "Kowalski")


def _text(n: int) -> str:
    """A context of its own for source ``n`` (names, years, counts, units, a negation and a
    comparison in several sentences, so that every rule finds something)."""
    a, b = f"{_FIRST[n % 10]} {_LAST[n % 7]}", f"{_FIRST[(n + 3) % 10]} {_LAST[(n + 4) % 7]}"
    town, lake = f"Port {_LAST[(n + 1) % 10]}", f"Lake {_LAST[(n + 2) % 10]}"
    return (f"The company was founded in {1900 + n} by {a} in the town of {town}. "
            f"It moved its offices to the city in {1950 + n} after a long dispute. "
            f"By then the firm had {120 + n} employees in {7 + n % 5} offices across the region. "
            f"The board said that the new plant was not ready for the winter season. "
            f"The factory at {lake} is larger than the old site near {town} today. "
            f"Its chief engineer {b} met {a} again at the trade fair in the spring. "
            f"The plant covers {40 + n} acres and produces goods every single day.")


def _write_data(root: Path) -> tuple[Path, Path]:
    rag, hal = root / "ragtruth", root / "halueval"
    rag.mkdir()
    hal.mkdir()
    for task in ragtruth.TASKS:
        with ragtruth.path_of(task, rag).open("w") as f:
            for sid in range(1, 41):
                source: object = {"passages": f"passage 1: {_text(sid)}", "question": "What happened?"}
                if task == "summary":
                    source = _text(sid)
                elif task == "data2txt":
                    source = {"name": f"Shop {sid}"}
                f.write(json.dumps({"source_id": sid, "source": source,
                                    "responses": [{"response": "A reply.", "labels": []}]}) + "\n")
    for task in halueval.TASKS:
        with (hal / f"{task}.jsonl").open("w") as f:
            for i in range(40):
                n = 100 + i
                name = f"{_FIRST[n % 10]} {_LAST[n % 7]}"
                f.write(json.dumps({"knowledge": _text(n), "question": "Who founded the company?",
                                    "right_answer": name, "hallucinated_answer": "Someone else.",
                                    "document": _text(n), "summary": "s", "hallucinated_summary": "h",
                                    "dialogue_history": "d", "response": "r"}) + "\n")
    return rag, hal


def test_answers_come_from_train_part_contexts_only(tmp_path: Path) -> None:
    rag, hal = _write_data(tmp_path)
    cases = generate(10, 3, rag, hal)
    train = {_text(sid) for sid in range(1, 41) if ragtruth.fold_of(sid) == "train"}
    train |= {_text(100 + i) for i in range(40) if halueval.fold_of(i) == "train"}
    assert cases and {c.wrong for c in cases} == {True, False}
    for c in cases:
        assert all(passage in train or passage.removeprefix("passage 1: ") in train for passage in c.context), c
    wrong = [c for c in cases if c.wrong]
    assert {c.kind for c in wrong} >= {"year of another event", "count of another fact", "negation dropped"}
    for c in wrong:  # the span is the changed text; a sentence answer is no sentence of the context
        assert 0 <= c.start < c.end <= len(c.answer)
        assert c.kind in {"one-name answer", "title abbreviated"} or c.answer not in " ".join(c.context)
    assert generate(10, 3, rag, hal) == cases
    assert generate(10, 4, rag, hal) != cases


def test_a_context_a_held_out_part_also_holds_is_left_out(tmp_path: Path) -> None:
    rag, hal = _write_data(tmp_path)
    # HaluEval line 2 (train) repeats line 1's (dev) knowledge: it must not be drawn from.
    rows = (hal / "qa.jsonl").read_text().splitlines()
    rows[2] = rows[1]
    (hal / "qa.jsonl").write_text("\n".join(rows) + "\n")
    dev = _text(101)
    assert all(dev not in c.context for c in generate(10, 3, rag, hal))


def test_examples_and_scored_cases_keep_the_span(tmp_path: Path) -> None:
    rag, hal = _write_data(tmp_path)
    cases = generate(5, 3, rag, hal)
    examples = as_examples(cases)
    assert write_jsonl(iter(examples), tmp_path / "m.jsonl") == len(cases)
    assert read_jsonl(tmp_path / "m.jsonl") == examples
    for c, ex, scored in zip(cases, examples, as_scored(cases), strict=True):
        assert ex.hallucinated == c.wrong == scored.hallucinated
        if c.wrong:
            assert (ex.labels[0].start, ex.labels[0].end, ex.labels[0].kind) == (c.start, c.end, LABEL_KINDS[c.kind])
            assert scored.labels == ((c.start, c.end),)
        assert scored.item.answer == c.answer and tuple(scored.item.context) == c.context
