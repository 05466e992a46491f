"""Parsers of the ACR agents' replies (triples, yes/no verdicts, perturbations, answers).
Pure text handling: nothing scripted, no model."""

from __future__ import annotations

from truthlens.modes.acr import prompts
from truthlens.modes.acr.prompts import Triple


def test_requested_tagged_format() -> None:
    text = "<s>Australia | capital | Sydney</s>\n<s>Sydney | population | 5 million</s>"
    assert prompts.parse_triples(text) == [
        Triple("Australia", "capital", "Sydney"), Triple("Sydney", "population", "5 million")]


def test_paper_slash_format_and_bullets() -> None:
    text = "Here are the triples:\n- <s>Eiffel Tower/completed in/1889</s>\n"
    assert prompts.parse_triples(text) == [Triple("Eiffel Tower", "completed in", "1889")]


def test_untagged_lines_in_several_styles() -> None:
    text = "1. (Jane Austen, wrote, Pride and Prejudice)\n2) Mars | has moons | two\nnoise line\n"
    assert prompts.parse_triples(text) == [
        Triple("Jane Austen", "wrote", "Pride and Prejudice"), Triple("Mars", "has moons", "two")]


def test_none_and_malformed_yield_nothing() -> None:
    assert prompts.parse_triples("NONE") == []
    assert prompts.parse_triples("<s>only | two</s>") == []
    assert prompts.parse_triples("") == []


def test_triple_key_normalises_case_and_space() -> None:
    assert Triple("Australia ", "Capital", "sydney.").key() == Triple("australia", "capital", "Sydney").key()


def test_verdicts_missing_numbers_are_not_verified() -> None:
    assert prompts.parse_verdicts("1: yes\n2: No\n4: yes", 3) == [True, False, False]
    assert prompts.parse_verdicts("1. YES - it matches\n3) yes", 3) == [True, False, True]
    assert prompts.parse_verdicts("I think so", 2) == [False, False]


def test_perturbations() -> None:
    text = ("negation: Sydney is not the capital.\nEntity swap: Melbourne is the capital.\n"
            "- time_shift: In 1900 Sydney was the capital.\nextra: ignored")
    got = prompts.parse_perturbations(text)
    assert got == {"negation": "Sydney is not the capital.",
                   "entity_swap": "Melbourne is the capital.",
                   "time_shift": "In 1900 Sydney was the capital."}


def test_extract_answer_takes_the_last_answer_line() -> None:
    assert prompts.extract_answer("Thinking...\nAnswer: Paris\nFinal answer: Lyon") == "Lyon"
    assert prompts.extract_answer("**Answer:** Canberra") == "Canberra"
    assert prompts.extract_answer("  just text  ") == "just text"


def test_every_prompt_carries_its_task_tag() -> None:
    tags = [
        prompts.internal_messages("chain_of_thought", "q")[0]["content"],
        prompts.triples_messages("p", "q")[0]["content"],
        prompts.verify_messages("q", [Triple("a", "b", "c")])[0]["content"],
        prompts.external_answer_messages("q", [Triple("a", "b", "c")])[0]["content"],
        prompts.perturb_messages("q", "a")[0]["content"],
        prompts.counterfactual_answer_messages("q", "p")[0]["content"],
        prompts.fusion_messages("q", "i", "e", 0.6)[0]["content"],
    ]
    assert [t.split("]")[0] + "]" for t in tags] == [
        "[acr:internal-chain-of-thought]", "[acr:extract-triples]", "[acr:verify-triples]",
        "[acr:external-answer]", "[acr:perturb]", "[acr:counterfactual-answer]", "[acr:fuse]"]
    assert "weight 0.60" in prompts.fusion_messages("q", "i", "e", 0.6)[1]["content"]
    assert "weight 0.40" in prompts.fusion_messages("q", "i", "e", 0.6)[1]["content"]


def test_internal_prompts_never_see_context() -> None:
    for template in prompts.INTERNAL_TEMPLATES:
        messages = prompts.internal_messages(template, "Who wrote Hamlet?")
        assert [m["role"] for m in messages] == ["system", "user"]
        assert "Who wrote Hamlet?" in messages[1]["content"]
