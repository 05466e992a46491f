"""Chains of calls: an answer the gateway checked is remembered with its passages, and a later
request whose context holds that answer (a refine prompt's existing answer, a reduce step's
joined summaries, with or without the gateway's warning on it) is read with the passages behind
it instead; the gateway's warning is never a passage; the memory forgets (by age, count and
size). Pure functions on a memory of the test's own; nothing is scripted."""

from __future__ import annotations

import pytest

from truthlens.gateway.apis.context import chain, sources
from truthlens.gateway.apis.context.chain import ChainMemory
from truthlens.gateway.apis.context.settings import ContextSettings

WARNING = "⚠️ Warning: parts of this answer could not be verified against the provided context."
CHUNK1 = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
CHUNK2 = "It was designed by the company of Gustave Eiffel and completed in 1889."
ANSWER1 = "The Eiffel Tower was completed in 1925 and designed by Albert Speer."
SUMMARY2 = "The tower stands in Paris and was built by Gustave Eiffel's company by 1889."


def memory() -> ChainMemory:
    m = ChainMemory()
    m.note_warning(WARNING + "\n")
    return m


def test_a_refine_steps_existing_answer_is_replaced_by_its_passages() -> None:
    m = memory()
    m.remember([ANSWER1, f"{WARNING}\n\n{ANSWER1}"], [CHUNK1])
    # LlamaIndex's refine prompt: the new chunk, then the existing answer as the client got it.
    passages, chained = m.expand([CHUNK2, f"{WARNING}\n\n{ANSWER1}"])
    assert (passages, chained) == ((CHUNK2, CHUNK1), True)


def test_a_reduce_steps_summaries_are_replaced_by_every_chunk_behind_them() -> None:
    m = memory()
    m.remember([ANSWER1], [CHUNK1])
    m.remember([SUMMARY2], [CHUNK2])
    # map_reduce's reduce prompt: the map answers joined with blank lines, one of them warned.
    passages, chained = m.expand([WARNING, ANSWER1, SUMMARY2])
    assert (passages, chained) == ((CHUNK1, CHUNK2), True)


def test_an_answer_split_into_paragraphs_is_still_found() -> None:
    m = memory()
    long = f"{ANSWER1}\n\nIt is also said to be the tallest tower in Europe."
    m.remember([long], [CHUNK1])
    assert m.expand([CHUNK2, *long.split("\n\n")]) == ((CHUNK2, CHUNK1), True)


def test_steps_chain_step_after_step() -> None:
    m = memory()
    m.remember([ANSWER1], [CHUNK1])
    step2, _ = m.expand([CHUNK2, ANSWER1])
    m.remember([SUMMARY2], step2)  # step two's answer, checked against both chunks
    assert m.expand(["A third chunk about the tower's paint.", SUMMARY2])[0] == (
        "A third chunk about the tower's paint.", CHUNK2, CHUNK1)


def test_the_warning_is_never_a_passage_and_unknown_text_is_kept_as_it_is() -> None:
    m = memory()
    assert m.expand([f"{WARNING}\n\n{CHUNK1}", WARNING, "Line one.\n  Line two."]) == (
        (CHUNK1, "Line one.\n  Line two."), False)


def test_the_memory_forgets_by_age_count_and_size() -> None:
    m = ChainMemory(max_entries=2, ttl_s=10.0)
    m.remember([ANSWER1], [CHUNK1], now=0.0)
    assert m.expand([ANSWER1], now=11.0) == ((ANSWER1,), False)  # expired
    for i in range(3):
        m.remember([f"{ANSWER1} ({i})"], [CHUNK1], now=20.0)
    assert m.expand([f"{ANSWER1} (0)"], now=21.0)[1] is False  # evicted: two entries at most
    assert m.expand([f"{ANSWER1} (2)"], now=21.0)[1] is True
    small = ChainMemory(max_chars=8 * 100)
    small.remember([ANSWER1], ["x" * 200])  # over an eighth of the budget: not remembered
    assert small.expand([ANSWER1])[1] is False


def test_a_short_answer_is_not_remembered() -> None:
    m = memory()
    m.remember(["Paris."], [CHUNK1])
    assert m.expand(["Paris."]) == (("Paris.",), False)


def test_gather_names_the_chain_in_the_context_source(monkeypatch: pytest.MonkeyPatch) -> None:
    m = memory()
    m.remember([ANSWER1], [CHUNK1])
    monkeypatch.setattr(chain, "MEMORY", m)
    found = sources.gather(ContextSettings(), field=[CHUNK2, ANSWER1], tools=[], messages=[], question="q")
    assert (found.passages, found.source) == ((CHUNK2, CHUNK1), "field,chain")


def test_a_warning_copied_into_an_answer_is_blanked_keeping_every_offset() -> None:
    m = memory()
    answer = f"{WARNING}\n\n{ANSWER1}"
    blanked = m.blank_warnings(answer)
    assert len(blanked) == len(answer) and blanked.strip() == ANSWER1
    assert blanked.index("1925") == answer.index("1925")
    assert m.blank_warnings(ANSWER1) == ANSWER1


def test_another_clients_answer_is_never_expanded() -> None:
    m = memory()
    alice = chain.scope_of({"authorization": "Bearer alice"})
    m.remember([ANSWER1], [CHUNK1], scope=alice)
    token = chain.SCOPE.set(chain.scope_of({"authorization": "Bearer mallory"}))
    try:
        assert m.expand([ANSWER1]) == ((ANSWER1,), False)  # read as it came: not alice's documents
    finally:
        chain.SCOPE.reset(token)
    token = chain.SCOPE.set(alice)
    try:
        assert m.expand([ANSWER1]) == ((CHUNK1,), True)
    finally:
        chain.SCOPE.reset(token)
