"""Names in the wrong role: an answer clause that states what the context says of *another* name.

"Buzz Aldrin stayed in lunar orbit aboard Columbia" names only people the context names, so a
name look-up calls it supported. A reader finds the context sentence that talks about staying
in lunar orbit aboard Columbia, sees Michael Collins there and not Aldrin, and knows the answer
gave Collins' role to Aldrin. :func:`misattributed_names` does the same, by rule:

1. the answer is cut into clauses (sentences, then at commas, semicolons and "while",
   "whereas", "but", "although", "and" before a name);
2. for each name of a clause, the clause's other content words (other names included, numbers
   and stop words not) are what it says of that name;
3. the one context sentence sharing most of them (at least two, and half) is the evidence; it
   must also mention the clause's other names, and share strictly more than every context
   sentence that mentions this name;
4. the name is misattributed when the evidence does not mention it (nor the same name inflected:
   "Houthis" / "Houthi", nor another part of a full name the context gives it: "Cameron" for
   "Hardin", of "Cameron Hardin") but gives another name, sharing no word with the clause's names, in its
   place (:func:`.names.place`: a content word beside both, on either side, or both opening
   their clause or standing as a passive verb's agent). A name the evidence gives elsewhere is
   a speaker ("..., Sachs said"), a source ("according to Amnesty International") or a detail,
   while the evidence speaks of the answer's name by a description ("the detective"): on
   RAGTruth's faithful summaries those made most of this check's findings. So is a name
   modifying the noun after it ("the Denver native", "the Aston Villa goalkeeper": the evidence
   describes the answer's name by it, :func:`.name_forms.is_modifier`). Names after a
   preposition, places and objects such as "on the Moon", are not judged, nor a name modifying
   a noun in the answer ("an American woman was shot": the woman is the actor; on RAGTruth's
   odd half those were 7 findings in faithful answers and 1 in a hallucinated one, outside its
   labelled span; what it gives up is a changed attribute, "Five Kurdish militants were
   wounded" for "Four Turkish troops ...").

A short answer leaves out what the question says ("It was Buzz Aldrin." answering "Who stayed in
lunar orbit aboard Columbia?"): it is judged by the question's focus (:mod:`.short_answers.focus`, through the
clause check); :func:`is_short_answer` tells one (at most :data:`SHORT_ANSWER_WORDS` words).

So "The capital of Australia is Sydney." against "Canberra is the capital of Australia. Sydney
is its largest city." flags "Sydney", and "Michael Collins stayed in lunar orbit aboard Columbia
while Armstrong and Aldrin landed on the Moon." is left alone. Pronouns ("He said ...") do not
trip it: the evidence sentence must name someone else. What it cannot see: roles split across
sentences, and relations expressed with no shared words (the model's job).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from truthlens.detector.facts.name_forms import after_preposition, is_joined, is_modifier
from truthlens.detector.facts.names import (
    Name,
    find_names,
    lower_case_words,
    place,
    same_place,
    same_word,
)
from truthlens.detector.text import STOP_WORDS, WORD, is_negated, stem

_CLAUSE_CUT = re.compile(r"[.!?;:]+\s+|\n+|,\s+|\s+(?:while|whereas|but|although|though)\s+", re.IGNORECASE)
_NUMERAL = re.compile(r"\d[\d,]*(?:\.\d+)?")
_SENTENCE_CUT = re.compile(r"(?<=[.!?])\s+|\n+")
# A name right after a preposition is a place or an object ("landed on the Moon"), not the
# clause's actor or the value it asserts; those are left to the model (:func:`.name_forms.after_preposition`).
# Ordinals name no role ("the first man"): left out with the stop words.
_STOP = STOP_WORDS | {"first", "second"}


MAX_RELATION_WORDS = 8
MAX_CLAUSE_NAMES = 3
MIN_SHARED_WORDS = 2
SHORT_ANSWER_WORDS = 12


@dataclass(frozen=True, slots=True)
class Misattribution:
    """``answer[start:end]`` is a name the context gives another role."""

    start: int
    end: int
    text: str
    fit: float = 0.0  # the share of the clause's relation words its evidence sentence holds


def _stem(word: str) -> str:
    return stem(word)


def _relation_words(text: str, names: Sequence[Name], offset: int) -> set[str]:
    inside = [(n.start - offset, n.end - offset) for n in names]
    words = set()
    for m in WORD.finditer(text):
        if any(s <= m.start() < e for s, e in inside):
            continue
        w = m.group(0).lower()
        if w not in _STOP and len(w) > 2:
            words.add(_stem(w))
    return words


def clause_words(text: str) -> set[str]:
    """The content words of ``text`` as the role check compares them (stemmed, lower case, no stop
    words or numbers), names included."""
    return _relation_words(text, [], 0)


def numerals(text: str) -> frozenset[str]:
    """The numerals of ``text`` as digit strings, separators dropped ("1,280" and "1280" alike)."""
    return frozenset(m.group(0).replace(",", "") for m in _NUMERAL.finditer(text))


def clause_spans(answer: str) -> list[tuple[int, int]]:
    """``answer``'s clauses as the role check reads them: (start, end) character offsets."""
    return _spans(answer, _CLAUSE_CUT)


def _spans(text: str, cut: re.Pattern[str]) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in cut.finditer(text):
        if m.start() > start:
            out.append((start, m.start()))
        start = m.end()
    if start < len(text):
        out.append((start, len(text)))
    return out


@dataclass(frozen=True, slots=True)
class _Sentence:
    words: set[str]
    names: tuple[frozenset[str], ...]
    negated: bool
    numbers: frozenset[str]  # its numerals, digits only ("1,280" -> "1280")
    # Its names read strictly (a capitalised word opening it only when the context never writes
    # it in lower case: "Taken together, ..." names no one), each with where it stands
    # (:func:`place`) and whether it modifies the noun after it (:func:`.name_forms.is_modifier`):
    # the names that may stand in an answer name's place.
    placed: tuple[tuple[frozenset[str], tuple[str, str], bool], ...] = ()


def _mentions(sentence: _Sentence, name: Name) -> bool:
    """Whether ``sentence`` names ``name``: a word of it, or the same word in another form
    ("Houthis" / "Houthi", "Saudi" / "Saudis", "Yemeni" / "Yemen")."""
    return any(any(same_word(w, k) for w in name.words for k in known) for known in sentence.names)


@dataclass(frozen=True, slots=True)
class ContextSentences:
    """What the role check reads of a context, built once per context (it is the same context
    for every re-check of a refine loop or every claim of premium, so callers may cache it)."""

    sentences: tuple[_Sentence, ...]
    lower_words: frozenset[str]  # words the context writes in lower case
    # Words of the context's names of two words or more ("Buzz Aldrin"), but for words it also
    # writes in lower case: what a bare surname in the answer may be.
    name_words: frozenset[str] = frozenset()
    # The words of each of its names of two words or more, but those joined at a possessive
    # ("Turkey's Kurdish minority" is not one person): a person's full name ("Cameron Hardin").
    full_names: frozenset[frozenset[str]] = frozenset()


def context_sentences(context: Sequence[str]) -> ContextSentences:
    sentences: list[_Sentence] = []
    full: set[frozenset[str]] = set()
    lower = lower_case_words("\n".join(context))
    for passage in context:
        for start, end in _spans(passage, _SENTENCE_CUT):
            text = passage[start:end]
            names = find_names(text, frozenset(), skip_sentence_starts=False)
            strict = find_names(text, lower, skip_sentence_starts=True)
            full.update(frozenset(n.words) for n in names if len(n.words) > 1 and not is_joined(text[n.start:n.end]))
            placed = tuple((frozenset(n.words), place(text, n.start, n.end, past_names=True),
                            is_modifier(text, n.start, n.end)) for n in strict)
            sentences.append(_Sentence(
                _relation_words(text, [], 0), tuple(frozenset(n.words) for n in names), is_negated(text),
                numerals(text), placed,
            ))
    name_words = frozenset(w for s in sentences for name in s.names if len(name) > 1 for w in name if w not in lower)
    return ContextSentences(tuple(sentences), lower, name_words, frozenset(full))


def _answer_names(answer: str, index: ContextSentences) -> list[Name]:
    """The answer's names, with one a name look-up leaves out: a lone capitalised word opening a
    sentence ("Aldrin stayed in orbit") that the context uses as a word of one of its names."""
    lower = lower_case_words(answer) | index.lower_words
    names = find_names(answer, lower, skip_sentence_starts=True)
    starts = {n.start for n in names}
    for name in find_names(answer, lower, skip_sentence_starts=False):
        if name.start not in starts and len(name.words) == 1 and name.words[0] in index.name_words:
            names.append(name)
    return sorted(names, key=lambda n: n.start)


def is_short_answer(answer: str) -> bool:
    """One sentence of at most :data:`SHORT_ANSWER_WORDS` words (a bare "Yes." or "No." before it
    aside): an answer that leans on its question."""
    sentences = [answer[s:e] for s, e in _spans(answer.strip(), _SENTENCE_CUT)]
    if len(sentences) == 2 and sentences[0].strip(" .!,").lower() in ("yes", "no"):
        sentences = sentences[1:]
    return len(sentences) == 1 and len(sentences[0].split()) <= SHORT_ANSWER_WORDS


def _swap_evidence(
    name: Name, clause_names: Sequence[Name], relation: set[str], sentences: Sequence[_Sentence],
    where: tuple[str, str], full_names: frozenset[frozenset[str]] = frozenset(),
) -> _Sentence | None:
    """The context sentence that says what ``relation`` says of ``name`` (standing at ``where`` in
    its clause, :func:`place`) but of another name in its place, or None (steps 3 and 4 of the
    module note)."""
    if not relation or len(relation) > MAX_RELATION_WORDS:
        return None
    clause_words = {w for n in clause_names for w in n.words}
    name_stems = {_stem(w) for w in clause_words}
    overlaps = [len(relation & s.words) for s in sentences]
    best = max(overlaps)
    evidence = [s for s, o in zip(sentences, overlaps, strict=True) if o == best]
    # One clear evidence sentence sharing at least two words and half of the clause: anything
    # looser is a paraphrase more often than a swap.
    if best < max(MIN_SHARED_WORDS, -(-len(relation) // 2)) or len(evidence) != 1:
        return None
    (sentence,) = evidence
    # The evidence must share what is said, not only who is named: "Columbia was flown by Buzz
    # Aldrin" meets Aldrin's landing sentence on his name alone.
    if _mentions(sentence, name) or not (relation - name_stems) & sentence.words:
        return None
    # It may name the answer's person by another part of a full name the context gives ("Cameron"
    # for "Hardin", of "Cameron Hardin").
    whole = set(name.words)
    if any(known | whole <= n for known in sentence.names for n in full_names):
        return None
    # A swap puts one wrong name into what is otherwise the evidence's sentence; a clause whose
    # other names the evidence lacks too draws on more than one sentence.
    if any(not _mentions(sentence, other) for other in clause_names if other is not name):
        return None
    # Some sentence that does mention the name matches the clause as well: no role swap.
    mentioning = [o for s, o in zip(sentences, overlaps, strict=True) if _mentions(s, name)]
    if not mentioning or max(mentioning) >= best:
        return None  # (never mentioned: the name look-up's finding, not this one)
    # The evidence gives another name in this name's place (the same content word before or after
    # it): a name it gives elsewhere is the speaker ("..., Sachs said"), a source ("according to
    # Amnesty International") or a detail the answer leaves out, while the evidence speaks of the
    # answer's name by a description ("the detective", "the company").
    # A name modifying a noun ("the Denver native") describes the one who acts. (One after a
    # preposition stays: passing over those in the evidence cost more catches in HaluEval's dev
    # hallucinated answers than it saved false alarms in RAGTruth's faithful ones.)
    others = [p for known, p, modifies in sentence.placed if not known & clause_words and not modifies]
    return sentence if any(same_place(where, p, reworded=True) for p in others) else None


def misattributed_names(
    answer: str, context: Sequence[str] | ContextSentences, question: str = ""
) -> tuple[Misattribution, ...]:
    """Names of ``answer`` whose clause's best evidence sentence names someone else instead
    (``question`` is not read: a short answer's focus is :mod:`.short_answers.focus`'s)."""
    index = context if isinstance(context, ContextSentences) else context_sentences(context)
    sentences = index.sentences
    if not sentences:
        return ()
    answer_names = _answer_names(answer, index)
    found: list[Misattribution] = []
    for c_start, c_end in _spans(answer, _CLAUSE_CUT):
        clause_names = [n for n in answer_names if c_start <= n.start and n.end <= c_end]
        if not clause_names or len(clause_names) > MAX_CLAUSE_NAMES:
            continue
        for name in clause_names:
            before = answer[c_start : name.start]
            if after_preposition(before):
                continue
            if is_modifier(answer, name.start, name.end):
                continue  # it describes the actor ("an American woman was shot")
            # The clause's words apart from this name (other names included: "capital of
            # Australia" must meet "Canberra is the capital of Australia" on both words).
            relation = _relation_words(answer[c_start:c_end], [name], c_start)
            where = place(answer, name.start, name.end, (c_start, c_end), past_names=True)
            evidence = _swap_evidence(name, clause_names, relation, sentences, where, index.full_names)
            if evidence is not None:
                fit = len(relation & evidence.words) / len(relation)
                found.append(Misattribution(name.start, name.end, answer[name.start : name.end], fit))
    return tuple(found)
