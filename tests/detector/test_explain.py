"""Where each flagged span's problem lies (``truthlens.detector.explain``): the answer's fact, the
closest passage, its sentence and what it states instead. Pure text; no model.

Real parts: the fact check (``check_facts``) finds the facts, as the engine's does; the spans are
placed on those facts here, as the engine's labelling places them."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from shipped_inputs import (
    APOLLO_CONTEXT,
    APOLLO_WRONG,
    CONTEXT,
    HALLUCINATED,
    PAVILION_CONTEXT,
    PAVILION_PRIMARY,
    WORSE,
)

from truthlens.detector import explain as explain_module
from truthlens.detector.explain import EVIDENCE_CHARS, INLINE_CONTEXT_CHARS, explain, explained
from truthlens.detector.facts import check_facts
from truthlens.detector.types import DetectionInput, Span

LOUVRE = "The Louvre is the world's most-visited museum. It opened in 1793 in a former royal palace."
EIFFEL_EVIDENCE = (
    "It was designed by the engineering company of Gustave Eiffel and completed in 1889 as the entrance arch "
    "to the World's Fair."
)


def spans_of(answer: str, context: Sequence[str], *flagged: str) -> dict[str, Span]:
    """Each ``flagged`` text of ``answer`` as a span, reason from the fact check as the engine gives it."""
    findings = check_facts(answer, context).findings
    spans = []
    for text in flagged:
        start = answer.index(text)
        hits = [f for f in findings if f.start < start + len(text) and start < f.end]
        spans.append(Span(start, start + len(text), text, 0.9, hits[0].reason if hits else "model"))
    return {s.text: s for s in explain(spans, findings, answer, context)}


def test_a_wrong_year_names_the_passage_its_sentence_and_the_year_it_states() -> None:
    span = spans_of(HALLUCINATED, [LOUVRE, CONTEXT], "1925")["1925"]
    assert span.reason == "unsupported_date"
    assert (span.fact, span.passage, span.context_fact) == ("1925", 1, "1889")
    assert span.evidence == EIFFEL_EVIDENCE


def test_a_made_up_name_is_set_against_the_name_the_context_gives_that_role() -> None:
    spans = spans_of(HALLUCINATED, [CONTEXT], "Albert Speer")
    assert spans["Albert Speer"].reason == "unsupported_entity"
    assert (spans["Albert Speer"].passage, spans["Albert Speer"].context_fact) == (0, "Gustave Eiffel")
    brunel = spans_of(PAVILION_PRIMARY, [PAVILION_CONTEXT], "Isambard Brunel")["Isambard Brunel"]
    assert brunel.evidence == "It was designed by Antoni Gaudi and opened in 1998."
    assert brunel.context_fact == "Antoni Gaudi"


def test_swapped_roles_each_lead_to_the_sentence_of_their_own_clause() -> None:
    spans = spans_of(APOLLO_WRONG, [APOLLO_CONTEXT], "Buzz Aldrin", "Collins")
    aldrin, collins = spans["Buzz Aldrin"], spans["Collins"]
    assert aldrin.reason == collins.reason == "misattributed_entity"
    # "Buzz Aldrin stayed in lunar orbit aboard ... Columbia": the context says that of Collins.
    assert aldrin.evidence is not None and aldrin.evidence.startswith("Michael Collins flew")
    assert aldrin.context_fact == "Michael Collins"
    # "... while Armstrong and Collins landed": the context's landing sentence names Aldrin instead.
    assert collins.evidence is not None and collins.evidence.startswith("Commander Neil Armstrong")
    assert collins.context_fact is not None and collins.context_fact.endswith("Buzz Aldrin")


def test_a_wrong_amount_is_set_against_the_amount_the_passage_states() -> None:
    answer = "The Harbour Pavilion is in Rotterdam. The hall is 400 metres long."
    span = spans_of(answer, [PAVILION_CONTEXT], "400 metres")["400 metres"]
    assert span.reason == "unsupported_number"
    assert (span.fact, span.passage, span.context_fact) == ("400 metres", 0, "40 metres")
    assert span.evidence == "The hall is 40 metres long."


def test_a_model_only_span_gets_its_passage_but_no_fact() -> None:
    spans = spans_of(WORSE, [LOUVRE, CONTEXT], "solid gold", "completed in 1925")
    gold = spans["solid gold"]
    assert gold.reason == "model"
    # "It is made of solid gold." shares no word with any passage.
    assert (gold.fact, gold.passage, gold.evidence, gold.context_fact) == (None, None, None, None)
    completed = spans["completed in 1925"]  # a model span over a fact: the fact's reason and value
    assert (completed.reason, completed.fact, completed.passage) == ("unsupported_date", "1925", 1)


def test_a_long_evidence_sentence_is_cut_around_the_claim() -> None:
    filler = "a list of every rivet, girder and paint coat used over the years " * 12
    passage = f"The tower, {filler}, was completed in 1889 by the company of Gustave Eiffel."
    span = spans_of(HALLUCINATED, [passage], "1925")["1925"]
    assert span.evidence is not None and len(span.evidence) <= EVIDENCE_CHARS + 2
    assert span.evidence.startswith("…") and "completed in 1889" in span.evidence
    assert span.context_fact == "1889"


def test_no_context_leaves_every_span_as_it_was_but_for_its_fact() -> None:
    span = spans_of(HALLUCINATED, [], "1925")["1925"]
    assert (span.fact, span.passage, span.evidence, span.context_fact) == ("1925", None, None, None)


async def test_a_long_context_is_explained_off_the_loop_and_a_failure_keeps_the_spans(
        monkeypatch: pytest.MonkeyPatch) -> None:
    long_context = [LOUVRE] * (INLINE_CONTEXT_CHARS // len(LOUVRE) + 1) + [CONTEXT]
    item = DetectionInput(tuple(long_context), "When?", HALLUCINATED)
    findings = check_facts(HALLUCINATED, long_context).findings
    spans = [Span(f.start, f.end, f.text, 0.9, f.reason) for f in findings]
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def watched(*args: Any) -> tuple[Span, ...]:
        threads.append(threading.get_ident())
        return explain(*args)

    monkeypatch.setattr(explain_module, "explain", watched)
    (year, _name) = await explained(spans, findings, item)
    assert threads and threads[0] != loop_thread  # in a thread: the event loop kept serving
    assert (year.fact, year.passage, year.context_fact) == ("1925", len(long_context) - 1, "1889")

    def broken(*args: Any) -> tuple[Span, ...]:
        raise RuntimeError("a bug in the explanation")

    monkeypatch.setattr(explain_module, "explain", broken)
    assert await explained(spans, findings, item) == tuple(spans)  # the verdict's spans, as they were
