"""The ACR agents' prompt templates and the parsers of their replies.

Every prompt opens with a system line carrying a task tag (``[acr:internal-rewrite]``, ...)
so a log line, a trace or a scripted test upstream can tell the agent calls apart. System lines
hold only our fixed instructions; the question, passages, answers, triples and premises (all
untrusted: the client's or a model's text) go quoted into the user message's data block
(:mod:`truthlens.modes.quoting`).
Parsers are lenient about format (models drift) but never invent content: an unparseable
reply yields nothing, not a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from truthlens.modes.quoting import quoted_prompt

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
        "Restate the question in the data block in different words (a paraphrase with another "
        "sentence structure), then answer the restated question."
    ),
    "chain_of_thought": (
        "Think step by step about the question in the data block: write the intermediate facts and "
        "the reasoning that connects them, then give the answer."
    ),
    "counterfactual": (
        "Turn the question in the data block into a true/false statement about the most likely "
        "answer, judge whether the statement is true or false and say why, then give the correct "
        "answer."
    ),
    "contrast": (
        "Name an entity similar to the one the question in the data block is about that could be "
        "confused with it, state how the two differ on what is asked, then answer for the entity "
        "the question is really about."
    ),
}


def _system(tag: str, text: str) -> Message:
    """Our fixed instructions only; every untrusted text goes into the user message's data block."""
    return {"role": "system", "content": f"[acr:{tag}] {text}"}


def _user(task: str, fields: Mapping[str, Any]) -> Message:
    return {"role": "user", "content": quoted_prompt(task, fields)}


def internal_messages(template: InternalTemplate, question: str) -> list[Message]:
    return [
        _system(f"internal-{template.replace('_', '-')}", "You answer from your own knowledge. " + _ANSWER_RULE),
        _user(_INTERNAL[template], {"question": question}),
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
        _user("The text is in the data block under text, the question under question.",
              {"text": passage, "question": question}),
    ]


def verify_messages(question: str, triples: Sequence[Triple]) -> list[Message]:
    """ACR §4.1.2 alignment check, batched: one yes/no line per numbered triple."""
    return [
        _system(
            "verify-triples",
            "Identify the entities and the relation phrase the question asks about. For each "
            "numbered candidate triple, decide whether it contains all of the question's "
            "entities and whether its relation means the same as the question's relation. "
            "Reply with one line per triple, '<number>: yes' or '<number>: no', nothing else.",
        ),
        _user("The question is in the data block under question, the numbered candidate triples "
              "under candidate_triples.",
              {"question": question,
               "candidate_triples": [{"number": i, "triple": t.render()} for i, t in enumerate(triples, start=1)]}),
    ]


def external_answer_messages(question: str, triples: Sequence[Triple]) -> list[Message]:
    return [
        _system(
            "external-answer",
            "Answer the question in natural language using only the facts given as triples. "
            "Add no other information. Finish with one final line 'Answer: <short answer>'.",
        ),
        _user("The facts are in the data block under facts, the question under question.",
              {"facts": [t.render() for t in triples], "question": question}),
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
        _user("The question is in the data block under question, the answer under answer.",
              {"question": question, "answer": answer}),
    ]


def counterfactual_answer_messages(question: str, premise: str) -> list[Message]:
    return [
        _system(
            "counterfactual-answer",
            "Assume the stated premise holds, even if it contradicts what you know, and answer "
            "the question under it. Finish with one final line 'Answer: <short answer>'.",
        ),
        _user("The premise is in the data block under premise, the question under question.",
              {"premise": premise, "question": question}),
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
        # The weights are ours, so they stay in the instructions; the candidates are quoted.
        _user(f"The question is in the data block under question. The candidate from model knowledge "
              f"(weight {w_int}) is under from_model_knowledge, the candidate from retrieved documents "
              f"(weight {w_ext}) under from_retrieved_documents.",
              {"question": question, "from_model_knowledge": internal, "from_retrieved_documents": external}),
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
