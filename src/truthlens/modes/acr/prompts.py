"""The ACR agents' prompt templates and the parsers of their replies.

Every prompt opens with a system line carrying a task tag (``[acr:internal-rewrite]``, ...)
so a log line, a trace or a scripted test upstream can tell the agent calls apart.
Parsers are lenient about format (models drift) but never invent content: an unparseable
reply yields nothing, not a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Message = dict[str, str]
InternalTemplate = Literal["rewrite", "chain_of_thought", "counterfactual", "contrast"]
PerturbationKind = Literal["negation", "entity_swap", "time_shift"]

INTERNAL_TEMPLATES: tuple[InternalTemplate, ...] = (
    "rewrite", "chain_of_thought", "counterfactual", "contrast",
)
PERTURBATION_KINDS: tuple[PerturbationKind, ...] = ("negation", "entity_swap", "time_shift")

_ANSWER_RULE = (
    "Use only what you know; no documents are provided. Finish with one final line of the form "
    "'Answer: <short answer>'."
)

# ACR §4.1.1, Fig. 3: four angles on the same question, each asked WITHOUT the context.
_INTERNAL: dict[InternalTemplate, str] = {
    "rewrite": (
        "Restate the question below in different words (a paraphrase with another sentence "
        "structure), then answer the restated question.\n\nQuestion: {question}"
    ),
    "chain_of_thought": (
        "Think step by step about the question below: write the intermediate facts and the "
        "reasoning that connects them, then give the answer.\n\nQuestion: {question}"
    ),
    "counterfactual": (
        "Turn the question below into a true/false statement about the most likely answer, "
        "judge whether the statement is true or false and say why, then give the correct "
        "answer.\n\nQuestion: {question}"
    ),
    "contrast": (
        "Name an entity similar to the one the question below is about that could be confused "
        "with it, state how the two differ on what is asked, then answer for the entity the "
        "question is really about.\n\nQuestion: {question}"
    ),
}


def _system(tag: str, text: str) -> Message:
    return {"role": "system", "content": f"[acr:{tag}] {text}"}


def internal_messages(template: InternalTemplate, question: str) -> list[Message]:
    return [
        _system(f"internal-{template.replace('_', '-')}", "You answer from your own knowledge. " + _ANSWER_RULE),
        {"role": "user", "content": _INTERNAL[template].format(question=question)},
    ]


def triples_messages(passage: str, question: str) -> list[Message]:
    """ACR §4.1.2 extraction prompt: the most relevant (subject, relation, object) facts."""
    return [
        _system(
            "extract-triples",
            "You are an information extraction assistant. Extract from the text the factual "
            "triples most relevant to the question. Write one triple per line, strictly as "
            "<s>subject | relation | object</s>. Write nothing else; write NONE if the text "
            "holds no relevant fact.",
        ),
        {"role": "user", "content": f"Text: {passage}\n\nQuestion: {question}"},
    ]


def verify_messages(question: str, triples: Sequence[Triple]) -> list[Message]:
    """ACR §4.1.2 alignment check, batched: one yes/no line per numbered triple."""
    listing = "\n".join(f"{i}. {t.render()}" for i, t in enumerate(triples, start=1))
    return [
        _system(
            "verify-triples",
            "Identify the entities and the relation phrase the question asks about. For each "
            "numbered candidate triple, decide whether it contains all of the question's "
            "entities and whether its relation means the same as the question's relation. "
            "Reply with one line per triple, '<number>: yes' or '<number>: no', nothing else.",
        ),
        {"role": "user", "content": f"Question: {question}\n\nCandidate triples:\n{listing}"},
    ]


def external_answer_messages(question: str, triples: Sequence[Triple]) -> list[Message]:
    facts = "\n".join(t.render() for t in triples)
    return [
        _system(
            "external-answer",
            "Answer the question in natural language using only the facts given as triples. "
            "Add no other information. Finish with one final line 'Answer: <short answer>'.",
        ),
        {"role": "user", "content": f"Facts:\n{facts}\n\nQuestion: {question}"},
    ]


def perturb_messages(question: str, answer: str) -> list[Message]:
    """ACR §4.2.1, Fig. 4: counterfactual variants of the key premise behind ``answer``."""
    return [
        _system(
            "perturb",
            "Identify the key premise that the answer to the question relies on. Write three "
            "counterfactual variants of that premise, one per line, exactly as:\n"
            "negation: <the premise negated>\n"
            "entity_swap: <the premise with its main entity replaced by a different entity of "
            "the same kind>\n"
            "time_shift: <the premise moved to another time or circumstance>",
        ),
        {"role": "user", "content": f"Question: {question}\nAnswer: {answer}"},
    ]


def counterfactual_answer_messages(question: str, premise: str) -> list[Message]:
    return [
        _system(
            "counterfactual-answer",
            "Assume the stated premise holds, even if it contradicts what you know, and answer "
            "the question under it. Finish with one final line 'Answer: <short answer>'.",
        ),
        {"role": "user", "content": f"Premise: {premise}\n\nQuestion: {question}"},
    ]


def fusion_messages(
    question: str, internal: str, external: str, weight_internal: float
) -> list[Message]:
    """The black-box stand-in for h_t = w·h_int + (1 − w)·h_ext (eq. 21, roles as in eq. 18)."""
    w_int = f"{weight_internal:.2f}"
    w_ext = f"{1.0 - weight_internal:.2f}"
    return [
        _system(
            "fuse",
            "Two candidate answers to the question disagree. One comes from the model's own "
            "knowledge, the other from retrieved documents; each comes with a reliability "
            "weight (the weights sum to 1). Write the final answer: rely on each source in "
            "proportion to its weight, follow the heavier one where they contradict, and say "
            "briefly that the sources disagree when the weights are close. Do not add facts "
            "that neither candidate contains.",
        ),
        {
            "role": "user",
            "content": (
                f"Question: {question}\n\n"
                f"Candidate from model knowledge (weight {w_int}): {internal}\n"
                f"Candidate from retrieved documents (weight {w_ext}): {external}"
            ),
        },
    ]


# ---------------------------------------------------------------------------------------------
# Reply parsers

_ANSWER_LINE = re.compile(r"^\s*(?:\*\*)?(?:final\s+)?answer\s*(?:\*\*)?\s*[:：]\s*(.+?)\s*$",
                          re.IGNORECASE | re.MULTILINE)


def extract_answer(text: str) -> str:
    """The last 'Answer: ...' line of a reply, else the whole reply stripped."""
    found = _ANSWER_LINE.findall(text)
    answer = found[-1] if found else text
    return answer.strip().strip("*").strip()


@dataclass(frozen=True, slots=True)
class Triple:
    subject: str
    relation: str
    object: str

    def render(self) -> str:
        return f"({self.subject}; {self.relation}; {self.object})"

    def key(self) -> tuple[str, str, str]:
        return (_norm(self.subject), _norm(self.relation), _norm(self.object))


def _norm(text: str) -> str:
    return " ".join(text.lower().strip(" .,;\"'").split())


_TAGGED = re.compile(r"<s>(.*?)</s>", re.IGNORECASE | re.DOTALL)
_LEADER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def parse_triples(text: str) -> list[Triple]:
    """Triples from an extraction reply.

    Accepts ``<s>a | b | c</s>`` (the requested form), the paper's ``a/b/c``, and untagged
    ``(a, b, c)`` / ``a | b | c`` / ``a; b; c`` lines, with list bullets. A piece that does not
    split into exactly three non-empty fields is skipped.
    """
    tagged = _TAGGED.findall(text)
    pieces = tagged if tagged else text.splitlines()
    triples: list[Triple] = []
    for piece in pieces:
        line = _LEADER.sub("", piece).strip().strip("()[]<>").strip()
        if not line or line.upper() == "NONE":
            continue
        fields: list[str] | None = None
        for sep in ("|", ";", "/", ","):
            parts = [p.strip().strip("\"'") for p in line.split(sep)]
            if len(parts) == 3 and all(parts):
                fields = parts
                break
        if fields is not None:
            triples.append(Triple(*fields))
    return triples


_VERDICT = re.compile(r"^\s*(\d+)\s*[.:)\-]\s*(yes|no)\b", re.IGNORECASE | re.MULTILINE)


def parse_verdicts(text: str, count: int) -> list[bool]:
    """One bool per triple; a triple the reply does not answer counts as not verified."""
    verdicts = [False] * count
    for number, word in _VERDICT.findall(text):
        index = int(number) - 1
        if 0 <= index < count:
            verdicts[index] = word.lower() == "yes"
    return verdicts


_PERTURBATION = re.compile(
    r"^\s*(?:[-*•]\s*)?(negation|entity[_ ]swap|time[_ ]shift)\s*[:：]\s*(.+?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def parse_perturbations(text: str) -> dict[PerturbationKind, str]:
    out: dict[PerturbationKind, str] = {}
    for kind, premise in _PERTURBATION.findall(text):
        key = kind.lower().replace(" ", "_")
        for known in PERTURBATION_KINDS:
            if key == known and known not in out:
                out[known] = premise
    return out
