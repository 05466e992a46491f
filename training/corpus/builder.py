"""Builds one grounded-QA example: passages, question, answer and hallucinated character spans.

The main entity's facts are spread over one to three passages among distractor passages
(other entities of the same domain, whose values differ) and padding prose. A supported
answer restates facts in its own words; a hallucinated one corrupts one or two claims
(number, unit, date, entity, negation, relation, a value of a distractor entity), adds an
unsupported claim, or answers a question the passages cannot answer. Labels are the
character spans of the hallucinated text inside the answer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from training.corpus import prose
from training.corpus.domains import Attribute, Domain
from training.corpus.values import HallucinationKind, Value, same_value

TemplateSplit = Literal["train", "heldout"]

_LEAD_INS = (
    "", "", "", "Based on the passages, ", "According to the provided context, ", "The passages state that ",
    "From the documents, ", "As stated in the passages, ",
)
_CLOSINGS = (
    "", "", "", "", " Let me know if you need more details.", " This is what the provided passages say.",
    " I hope this helps.", " These details come from the context above.",
)
_UNABLE = ("Unable to answer based on given passages.", "The passages do not contain this information.")
_SUMMARY_QUESTIONS = (
    "What do the passages say about {e}?",
    "Summarize the key facts about {e}.",
    "Give me an overview of {e}.",
    "Tell me about {e}.",
)
_MAX_PASSAGES = 8


@dataclass(frozen=True, slots=True)
class LabelSpan:
    start: int
    end: int
    kind: HallucinationKind


@dataclass(frozen=True, slots=True)
class Example:
    id: str
    split: str
    domain: str
    context: tuple[str, ...]
    question: str
    answer: str
    labels: tuple[LabelSpan, ...]

    @property
    def hallucinated(self) -> bool:
        return bool(self.labels)


def _train_or_heldout(items: tuple[str, ...], split: TemplateSplit) -> tuple[str, ...]:
    """The last template of every tuple belongs to the held-out split only."""
    if len(items) < 2:
        return items
    return items[:-1] if split == "train" else items[-1:]


@dataclass(slots=True)
class _Answer:
    """Accumulates answer text with the character spans of hallucinated pieces."""

    text: str = ""
    labels: list[LabelSpan] = field(default_factory=list)

    def add(self, piece: str) -> None:
        self.text += piece

    def add_labeled(self, piece: str, kind: HallucinationKind) -> None:
        start = len(self.text)
        self.text += piece
        self.labels.append(LabelSpan(start, len(self.text), kind))


def _fill(template: str, entity: str, value: str, *, lower_first: bool = False) -> tuple[str, str, str]:
    """(before, value, after) of a filled template, so the value's offsets are known."""
    before, after = template.split("{v}", 1)
    before = before.replace("{e}", entity)
    after = after.replace("{e}", entity)
    if lower_first and before and not template.startswith("{"):
        before = before[0].lower() + before[1:]
    return before, value, after


class ExampleBuilder:
    """Draws examples of one template split; deterministic given ``rng``."""

    def __init__(self, split: TemplateSplit, rng: random.Random, word_budget: int) -> None:
        self.split = split
        self.rng = rng
        self.word_budget = word_budget
        self.prose = prose.sentences(split)
        self.lead_ins = _train_or_heldout(_LEAD_INS, split)
        self.closings = _train_or_heldout(_CLOSINGS, split)
        self.unable = _train_or_heldout(_UNABLE, split)
        self.summary_questions = _train_or_heldout(_SUMMARY_QUESTIONS, split)

    def template(self, items: tuple[str, ...]) -> str:
        return self.rng.choice(_train_or_heldout(items, self.split))

    # ---- passages ----

    def _fact(self, attr: Attribute, entity: str, value: Value) -> str:
        return "".join(_fill(self.template(attr.facts), entity, value.render(self.rng)))

    def _entity_sentences(self, domain: Domain, entity: str, facts: dict[str, Value]) -> list[str]:
        by_name = {a.name: a for a in domain.attributes}
        sentences = [self._fact(by_name[name], entity, value) for name, value in facts.items()]
        background = _train_or_heldout(domain.background, self.split)
        for sentence in self.rng.sample(background, self.rng.randint(0, min(2, len(background)))):
            sentences.append(sentence.replace("{e}", entity))
        self.rng.shuffle(sentences)
        return sentences

    def _prose(self, n: int) -> str:
        return " ".join(self.rng.sample(self.prose, n))

    def _passages(
        self, domain: Domain, entity: str, facts: dict[str, Value], distractors: dict[str, dict[str, Value]]
    ) -> list[str]:
        rng = self.rng
        main = self._entity_sentences(domain, entity, facts)
        pieces = rng.randint(1, min(3, len(main)))
        cuts = sorted(rng.sample(range(1, len(main)), pieces - 1)) if pieces > 1 else []
        groups = [main[a:b] for a, b in zip([0, *cuts], [*cuts, len(main)], strict=True)]
        passages: list[tuple[str, bool]] = []  # (text, holds main facts)
        for group in groups:
            if rng.random() < 0.3:
                # the relevant facts buried inside unrelated prose
                group = [*group[: len(group) // 2], self._prose(rng.randint(1, 3)), *group[len(group) // 2 :]]
            passages.append((" ".join(group), True))
        for name, dfacts in distractors.items():
            passages.append((" ".join(self._entity_sentences(domain, name, dfacts)), False))
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            passages.append((self._prose(rng.randint(2, 10)), False))
        rng.shuffle(passages)
        # respect the model's window: drop distractor/padding passages (never a main one) until it fits
        # budgets vary so short and long contexts both occur
        budget = rng.randint(self.word_budget // 3, self.word_budget)
        while len(passages) > _MAX_PASSAGES or sum(len(p.split()) for p, _ in passages) > budget:
            optional = [i for i, (_, main_facts) in enumerate(passages) if not main_facts]
            if not optional:
                break
            passages.pop(rng.choice(optional))
        return [p for p, _ in passages]

    # ---- one example ----

    def build(self, domain: Domain, example_id: str, *, hallucinate: bool) -> Example:
        rng = self.rng
        entity = domain.entity(rng)
        values = {a.name: a.make(rng) for a in domain.attributes}
        attrs = list(domain.attributes)
        rng.shuffle(attrs)
        n_present = rng.randint(max(2, len(attrs) // 2), len(attrs))
        present, absent = attrs[:n_present], attrs[n_present:]

        distractors: dict[str, dict[str, Value]] = {}
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            name = domain.entity(rng)
            if name == entity or name in distractors:
                continue
            dfacts = {}
            for a in rng.sample(present, rng.randint(1, len(present))):
                v = a.make(rng)
                while same_value(v, values[a.name]):
                    v = a.make(rng)
                dfacts[a.name] = v
            distractors[name] = dfacts

        unanswerable = bool(absent) and rng.random() < 0.08
        if unanswerable:
            asked = [rng.choice(absent)]
        else:
            k = rng.choices((1, 2, 3, 4, 5), weights=(30, 25, 20, 15, 10))[0]
            asked = present[: min(k, len(present))]

        if len(asked) > 1 and rng.random() < 0.5:
            question = rng.choice(self.summary_questions).replace("{e}", entity)
        else:
            question = self.template(asked[0].questions).replace("{e}", entity)

        context = self._passages(domain, entity, {a.name: values[a.name] for a in present}, distractors)
        answer = self._answer(
            entity, asked, values, absent, distractors, unanswerable=unanswerable, hallucinate=hallucinate
        )
        return Example(example_id, self.split, domain.name, tuple(context), question, answer.text, tuple(answer.labels))

    def _join(self, out: _Answer) -> bool:
        """Separate the next claim: usually a new sentence, sometimes ", and" (then lower-case it)."""
        ends_in_label = bool(out.labels) and out.labels[-1].end == len(out.text)
        if out.text.endswith(".") and not ends_in_label and self.rng.random() < 0.2:
            out.text = out.text[:-1] + ", and "
            return True
        out.add(" ")
        return False

    def _answer(
        self,
        entity: str,
        asked: list[Attribute],
        values: dict[str, Value],
        absent: list[Attribute],
        distractors: dict[str, dict[str, Value]],
        *,
        unanswerable: bool,
        hallucinate: bool,
    ) -> _Answer:
        rng = self.rng
        out = _Answer()
        if unanswerable:
            if not hallucinate:
                out.add(rng.choice(self.unable))
                return out
            lead = rng.choice(self.lead_ins)
            out.add(lead)
            attr = asked[0]
            claim = "".join(
                _fill(self.template(attr.answers), entity, values[attr.name].render(rng), lower_first=bool(lead))
            )
            out.add_labeled(claim, "unanswerable")
            return out

        # which claims go wrong, and how
        corrupt: dict[int, str] = {}
        extra_at: int | None = None
        if hallucinate:
            mode = rng.choices(("value", "two_values", "unsupported"), weights=(70, 10, 20))[0]
            if mode == "unsupported" and absent:
                extra_at = rng.randint(0, len(asked))
            else:
                n = 2 if mode == "two_values" and len(asked) > 1 else 1
                for i in rng.sample(range(len(asked)), n):
                    corrupt[i] = "conflation" if rng.random() < 0.2 else "corrupt"

        lead = rng.choice(self.lead_ins)
        out.add(lead)
        first = True
        for i in range(len(asked) + 1):
            if extra_at == i:
                attr = rng.choice(absent)
                joined = not first and self._join(out)
                claim = "".join(
                    _fill(
                        self.template(attr.answers),
                        entity,
                        attr.make(rng).render(rng),
                        lower_first=joined or (first and bool(lead)),
                    )
                )
                out.add_labeled(claim, "unsupported")
                first = False
            if i == len(asked):
                break
            attr = asked[i]
            value = values[attr.name]
            kind: HallucinationKind | None = None
            if i in corrupt:
                donor = [d[attr.name] for d in distractors.values() if attr.name in d]
                if corrupt[i] == "conflation" and donor:
                    value, kind = rng.choice(donor), "conflation"
                else:
                    value, kind = value.corrupt(rng)
            joined = not first and self._join(out)
            before, text, after = _fill(
                self.template(attr.answers), entity, value.render(rng), lower_first=joined or (first and bool(lead))
            )
            out.add(before)
            if kind is None:
                out.add(text)
            else:
                out.add_labeled(text, kind)
            out.add(after)
            first = False
        out.add(rng.choice(self.closings))
        return out
