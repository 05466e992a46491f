"""A short answer judged by its question's focus: the holder of the role asked for, or someone given another.

"Who is the CFO?" - "It was Maria Lopez." names someone the context does name, so a look-up
calls it supported, and the answer says nothing of its own to align with a context clause. What
it claims is the question's focus: the role or attribute asked for ("CFO", "drummer", "which
German football club", "who directed ...", "owned and operated by whom"). A reader looks for the
context sentences that state that focus and reads the names there; an answer naming someone the
context mentions only in sentences without it, while another name stands in one that has it, is
a mix-up. :func:`off_focus_names` does the same, by rule:

1. the focus is read from the question's shape, titles and their abbreviations as one ("CFO" =
   "chief financial") (:mod:`.questions`);
2. the context's initials ("NCPO") are read as the words they stand for;
3. the context is read sentence by sentence; a sentence whose subject is a pronoun ("He was best
   known for narrating ...", "A noted engineer, he ...", "The film ...") also speaks of the names
   of the sentence before it;
4. each name of the context is scored by the most focus words one sentence that mentions it
   holds, and then one clause of it that mentions it (two names in one sentence: the clause
   ties each to its role); an answer's name (one the context mentions, the question does not) is
   off focus when another name, sharing no word with it, scores higher with at least half of
   the focus in its sentence, while its own clause holds less than the whole focus.

A title the context writes beside a name ("Prime Minister David Cameron", "Dr Christopher Kuhar,
executive director at the zoo") makes that name the holder: another name the context mentions,
in no clause of its own with that title, answering a question whose focus is that title, is off
focus whatever the sentences share (a clause naming the holder gives the title to the holder:
"Mark ... started a petition asking Prime Minister Tony Abbott").

The kind of thing asked for is one word, the question's head (:func:`question_head`: "what
southern California based band covered ...": band; "who directed ...": directed). What the
context calls each name is read by :mod:`.answer_types` ("Fighting Gravity, an American band";
"directed by John Carney"; "Lindenhurst is a village"). An answer's name the context calls
something else, while it calls another name, not the question's, what is asked, is off focus
(when the context says nothing of the answer's name but its own words, only if at most two
other names are called so); an answer's name the context calls what is asked is never off focus
by the sentence scores of step 4 ("directed by Chris Columbus" beside a sentence restating the
question). A title the question abbreviates ("Who is the CFO?") is judged by its holders alone.

A question asking for a work ("which movie", "what television show") is answered by a name the
context writes alone in quotes or calls a work (:mod:`.works`): one it does neither of, while it
does so of another name, is off focus; a "who" question answered by a name only ever quoted is too.

A one-name answer naming one of a list ("starred A, B and C") while the rest of a two-hop
question is said of another name of the list in a sentence of its own is off focus too
(:mod:`.bridges`), as is one of a kind the question cannot ask for (:mod:`.name_kinds`).

A question offering a choice ("Who was born first, Pablo Trapero or Aleksander Ford?",
"Between A and B, which ...?") is answered by one of its options: an answer naming none of the
question's names (nor ending on an option's last word: "Colin James Hay" for "Colin Hay"), but a
name the context mentions, is off focus too.

Passages joined without a space ("... the name Cossbysweater.Milhouse is ...", common in
retrieved chunks) are cut into sentences at the glued full stop.

Beside the rules, :func:`fit_reading` reads a short answer's names with a small learned fit of
the context's names to the question (:mod:`.answer_fit`): a name it gives almost none of the
share is off focus too; one it reads as what is asked keeps the rules' findings but weakens the
model's flag. Yes/no questions, choices and titles are the rules' alone.

What it cannot see: a focus the question words as the context never does ("stars as which
character" over "portraying Will Traynor"), a wrong name of the same kind that shares the focus
sentence with the right one ("directed by ..., with a screenplay by ..."), the kind of a "when"
question, a question that hops over two facts when the right name is called nothing
the question asks for (about half of HaluEval's one-name mix-ups stay unflagged), and answers
longer than a short one (their clauses are aligned by :mod:`.clauses`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from truthlens.detector.facts.names import Name, find_names, lower_case_words
from truthlens.detector.facts.short_answers.answer_fit import (
    ANSWERED_SHARE,
    UNLIKELY_SHARE,
    Features,
    FitIndex,
    asked,
    candidate_of,
    features,
    fit_index,
    pooled,
    shipped,
)
from truthlens.detector.facts.short_answers.answer_types import OWN, PERSON, descriptions, root, whole_names
from truthlens.detector.facts.short_answers.bridges import bridged_elsewhere, excludes, listed
from truthlens.detector.facts.short_answers.name_kinds import misfit, name_kinds
from truthlens.detector.facts.short_answers.questions import (
    CHOICE,
    SECOND_ASK,
    TITLE_STEMS,
    TITLES,
    YES_NO,
    question_focus,
    question_head,
    title_stems,
)
from truthlens.detector.facts.short_answers.works import WORK_NOUNS, same_medium, work_names
from truthlens.detector.text import STOP_WORDS, WORD, clauses, content_words, sentences, stem

# A sentence whose subject is a pronoun or "the film" ("A noted engineer, he constructed ..."):
# it goes on about a name of the sentence before.
_PRONOUN_START = re.compile(r"^(?:[\w'’-]+,?\s+){0,5}?(?:he|she|it|they|his|her|its|their|this|the\s+(?:company|firm|"
                            r"club|band|group|film|team|city|town|school|university|song|album|novel|show|series))\b",
                            re.IGNORECASE)
_GLUED = re.compile(r"(?<=[a-z)\"”'])\.(?=[A-Z][a-z])")
# The words of a title written right before a name (up to three, no punctuation between), or after
# it between commas ("George Whitesides, the chief executive,").
_TITLE_BEFORE = re.compile(r"((?:[A-Za-z]+\.?\s+){1,3})$")
_TITLE_AFTER = re.compile(r",\s+(?:the\s+|its\s+|a\s+|an\s+)?((?:[a-z][\w-]*\s*){1,4})(?=[,.;]|\s+(?:at|of|for)\b)")
MAX_OWN_WORDS = 1  # content words of a short answer besides its names and its question's words


@dataclass(frozen=True, slots=True)
class _Sentence:
    words: frozenset[str]  # stems of every word, names' words included, titles spelled out
    names: tuple[frozenset[str], ...]
    # Its clauses' words and names (:func:`truthlens.detector.text.clauses`): what ties a name to a
    # focus word when two names share the sentence ("Composer William Grant Still and soprano
    # Leontyne Price both have associations with the company").
    clauses: tuple[tuple[frozenset[str], tuple[frozenset[str], ...]], ...] = ()
    # The names of the sentence before that a pronoun subject carries over, and what the sentence
    # says of them (all of it: its first clause alone loses "A noted engineer, he built forts,
    # but suffered a defeat").
    carried: tuple[frozenset[str], ...] = ()
    carried_words: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class FocusIndex:
    """What the focus check reads of a context, built once per context."""

    sentences: tuple[_Sentence, ...]
    lower_words: frozenset[str]
    spelled: dict[str, frozenset[str]]  # the context's initials ("ncpo") and the stems they stand for
    # Each name with the words written right beside it as its title: "Prime Minister David
    # Cameron", "Dr Christopher Kuhar, executive director at the zoo" (stems, titles spelled out).
    titled: tuple[tuple[frozenset[str], frozenset[str]], ...] = ()
    # What the context calls each name (:mod:`.answer_types`): "an American band", "directed by".
    called: tuple[tuple[frozenset[str], frozenset[str]], ...] = ()
    quoted: frozenset[frozenset[str]] = frozenset()  # names written in quotes (:mod:`.works`)
    lists: tuple[frozenset[frozenset[str]], ...] = ()  # names listed together (:mod:`.bridges`)
    kinds: tuple[tuple[frozenset[str], str], ...] = ()  # a person, a place, ... (:mod:`.name_kinds`)
    fit: FitIndex = FitIndex((), ())  # the context's names as the learned fit reads them (:mod:`.answer_fit`)


@dataclass(frozen=True, slots=True)
class OffFocus:
    """``answer[start:end]`` names someone the context gives another role than the one the question asks for."""

    start: int
    end: int
    text: str


def focus_index(context: Sequence[str], spelled: dict[str, frozenset[str]]) -> FocusIndex:
    """Each context sentence's words and names (step 3 of the module note)."""
    lower = lower_case_words("\n".join(context))
    out: list[_Sentence] = []
    titled: list[tuple[frozenset[str], frozenset[str]]] = []
    lists: list[frozenset[frozenset[str]]] = []
    for passage in context:
        previous: tuple[frozenset[str], ...] = ()
        for start, end in _sentences(passage):
            text = passage[start:end]
            found = whole_names(text, [n for n in find_names(text, lower, skip_sentence_starts=False) if n.words])
            names = tuple(frozenset(n.words) for n in found)
            lists += listed(text, found)
            for n in found:
                beside = _TITLE_BEFORE.search(text, 0, n.start)
                after = _TITLE_AFTER.match(text, n.end)
                before = beside.group(1).split() if beside else []
                while before and before[0].lower().rstrip(".") in STOP_WORDS:
                    before = before[1:]  # "directed by John Carney": no title
                if any(w.lower().rstrip(".") in STOP_WORDS for w in before):
                    before = before[[w.lower().rstrip(".") in STOP_WORDS for w in before].index(True) + 1:]
                title = " ".join(before) + " " + (after.group(1) if after else "")
                if title.strip():
                    titled.append((frozenset(n.words), frozenset(title_stems(title, spelled))))
            lead = _PRONOUN_START.match(text)
            words = frozenset(title_stems(text, spelled))
            parts = [(frozenset(title_stems(text[a:b], spelled)),
                      tuple(frozenset(n.words) for n in found if a <= n.start < b)) for a, b in clauses(text)]
            carried: tuple[frozenset[str], ...] = ()
            if lead and previous and not any(n.start < lead.end() for n in found):
                carried = previous  # (which of them it speaks of is not read: all)
            out.append(_Sentence(words, names, tuple(parts), carried, words if carried else frozenset()))
            previous = names or carried or previous
    called: dict[frozenset[str], set[str]] = {}
    for passage in context:
        for key, said in descriptions(passage, find_names(passage, lower, skip_sentence_starts=False)).items():
            called.setdefault(key, set()).update(said)
    kinds = name_kinds(context, lower)
    quoted = work_names(context, lower)
    calls = {k: frozenset(v) for k, v in called.items()}
    return FocusIndex(tuple(out), lower, spelled, tuple(titled), tuple(calls.items()), quoted, tuple(lists),
                      tuple(kinds.items()), fit_index(context, kinds, calls, quoted, frozenset(n for n, _ in titled)))


def _sentences(passage: str) -> list[tuple[int, int]]:
    """The passage's sentences, a full stop glued to a capitalised word cut too: retrieved
    passages are often joined without a space ("... under the name Cossbysweater.Milhouse is ...")."""
    out = []
    for start, end in sentences(passage):
        for m in _GLUED.finditer(passage, start, end):
            out.append((start, m.end()))
            start = m.end()
        out.append((start, end))
    return out


def _score(index: FocusIndex, words: frozenset[str], focus: frozenset[str],
           holders: Sequence[frozenset[str]] = ()) -> tuple[int, int] | None:
    """The most focus words one sentence mentioning the name ``words`` holds, and then one clause
    of it that mentions the name (None: no sentence mentions it). A clause naming one of
    ``holders`` gives them its title, not this name ("... asking Prime Minister Tony Abbott")."""
    scores = []
    for s in index.sentences:
        if any(words & known for known in s.names):
            scores.append((len(focus & s.words), max((len(focus & w) for w, names in s.clauses
                                                      if any(words & k for k in names)
                                                      and not any(h & k for h in holders for k in names)), default=0)))
        elif any(words & known for known in s.carried) and not any(h & k for h in holders for k in s.names):
            scores.append((len(focus & s.carried_words),) * 2)
    return max(scores) if scores else None


def _short_answer_names(answer: str, question: str, index: FocusIndex) -> list[Name]:
    """The one or two names of ``answer`` when it is a name and little else ("It was Buzz Aldrin.",
    "The CFO is Maria Lopez.": what it says besides the name is the question's), else none."""
    if not question or not index.sentences or SECOND_ASK.search(question):
        return []  # (two questions in one: a short answer may answer either, so neither focus judges it)
    lower = index.lower_words | lower_case_words(answer)
    names = whole_names(answer, [n for n in find_names(answer, lower, skip_sentence_starts=True) if n.words])
    if not names or len(names) > 2:
        return []
    # (a short sentence of its own is the clause check's)
    said = content_words(answer) - {stem(w) for n in names for w in n.words} - content_words(question)
    return names if len(said - {"answer"}) <= MAX_OWN_WORDS else []


def off_focus_names(answer: str, question: str, index: FocusIndex) -> tuple[OffFocus, ...]:
    """Names of the short ``answer`` that the context ties to another role than ``question``'s focus."""
    names = _short_answer_names(answer, question, index)
    if not names:
        return ()
    asked_names = [n.words for n in find_names(question, lower_case_words(question), skip_sentence_starts=True)
                   if n.words]
    asked_words = {w for a in asked_names for w in a}
    if CHOICE.search(question) is not None:
        # A choice ("..., Pablo Trapero or Aleksander Ford?") is answered by one of its options:
        # a name the context mentions that holds no name of the question, nor its last word
        # ("Colin James Hay" for "Colin Hay"), is neither ("Cia Soro" for "Cia Berg").
        return tuple(_off(answer, n) for n in names if not any(_is_option(n.words, a) for a in asked_names)
                     and _score(index, frozenset(n.words), frozenset()) is not None)
    head = question_head(question, index.spelled)
    focus = question_focus(question, index.spelled) | head
    # (a name listed beside another that the rest of the question is said of: :mod:`.bridges`)
    hops = frozenset(title_stems(question, index.spelled))
    bridged = tuple(_off(answer, n) for n in names if not any(_is_asked(n.words, a) for a in asked_names)
                    and bridged_elsewhere(index, frozenset(n.words), hops, asked_words, excludes(question)))
    if not focus:
        return bridged
    known = {k for s in index.sentences for k in (*s.names, *s.carried)}
    # Names the context gives the focus as their title ("Prime Minister David Cameron").
    holders = [n for n, title in index.titled if focus <= title] if focus <= TITLE_STEMS else []
    # A title the question abbreviates ("Who is the CFO?", "the Gov.") is judged by its holders alone.
    abbreviated = any(m.group(0).lower() in TITLES and (m.group(0).isupper() or question[m.end():m.end() + 1] == ".")
                      for m in WORD.finditer(question))
    # (an answer naming a holder gives the holder: its other names are words of the title before
    # it, "Australian Prime" of "Australian Prime Minister Tony Abbott")
    names_a_holder = any(frozenset(n.words) & h for n in names for h in holders)
    out = []
    for name in names:
        words = frozenset(name.words)
        if any(_is_asked(name.words, a) for a in asked_names) or {stem(w) for w in words} <= focus:
            continue  # the question's own name, or the title itself ("It is Prime Minister.")
        mine = _score(index, words, focus)
        if (holders and not any(words & h for h in holders) and not names_a_holder and mine is not None
                and (_score(index, words, focus, holders) or (0, 0))[1] < len(focus)):
            # The title is another's, and no clause without its holder gives it to this name (the
            # firm of "Beverley Sunderland, managing director of Crosslands Solicitors" is no MD).
            out.append(_off(answer, name))
            continue
        typed = not holders and not abbreviated  # (a title's holder is read above)
        if typed and mine is not None and _wrong_kind_of_work(index, words, head, question, asked_words):
            out.append(_off(answer, name))
            continue
        if typed and mine is not None and (_mistyped(index, words, focus, head, asked_words)
                                           or misfit(index.kinds, words, question, head, asked_words)):
            out.append(_off(answer, name))
            continue
        if mine is None or mine[1] >= len(focus) or (typed and _called(index, words)[0] & _roots(focus)):
            continue  # (what the context calls it is what is asked: "directed by Chris Columbus")
        others = [_score(index, k, focus) or (0, 0) for k in known if not k & words and not k & asked_words]
        best = max(others, default=(0, 0))
        if best[0] > mine[0] and best[0] >= max(1, -(-len(focus) // 2)):
            out.append(_off(answer, name))
    return tuple(out) + tuple(b for b in bridged if b not in out)


@dataclass(frozen=True, slots=True)
class FitReading:
    """What the learned fit (:mod:`.answer_fit`) says of a short answer's names: those another name
    of the context answers far better, and those it reads as what the question asks for."""

    unlikely: tuple[OffFocus, ...] = ()
    answered: tuple[OffFocus, ...] = ()


def fit_reading(answer: str, question: str, index: FocusIndex) -> FitReading:
    """Each name of the short ``answer`` by its share of the context's names as the answer to ``question``."""
    shares = answer_shares(answer, question, index)
    return FitReading(tuple(_off(answer, n) for n, share in shares if share < UNLIKELY_SHARE),
                      tuple(_off(answer, n) for n, share in shares if share >= ANSWERED_SHARE))


def answer_shares(answer: str, question: str, index: FocusIndex) -> list[tuple[Name, float]]:
    """The names of the short ``answer`` that are names of the context, each with its share
    (:mod:`.answer_fit`); none when the context has one name only (nothing to weigh it against)."""
    head = question_head(question, index.spelled)
    focus = question_focus(question, index.spelled) | head
    if YES_NO.match(question) or CHOICE.search(question) or (focus and focus <= TITLE_STEMS):
        # A yes/no question asks for no name ("No, Mourinho is not afraid ..." names its subject);
        # a choice and a title ("Who is the CFO?") are the rules' to judge: the fit reads words,
        # and "chief financial officer" shares two of three with "chief executive officer".
        return []
    names = _short_answer_names(answer, question, index)
    found = _fit_features(question, head, focus, index) if names else {}
    if len(found) < 2:
        return []
    shares = shipped().shares(found)
    keys = [(name, candidate_of(found, frozenset(name.words))) for name in names]
    return [(name, pooled(shares, key)) for name, key in keys if key is not None]


def fit_features(question: str, index: FocusIndex) -> Features:
    """The learned fit's keys for each name of the context as the answer to ``question`` (:mod:`.answer_fit`)."""
    head = question_head(question, index.spelled)
    return _fit_features(question, head, question_focus(question, index.spelled) | head, index)


def _fit_features(question: str, head: frozenset[str], focus: frozenset[str], index: FocusIndex) -> Features:
    overlap = {c.words: _score(index, c.words, focus) or (0, 0) for c in index.fit.candidates}
    return features(asked(question, head, focus), index.fit, [(s.words, s.names) for s in index.sentences], overlap,
                    dict(index.called))


def _is_option(words: tuple[str, ...], option: tuple[str, ...]) -> bool:
    """Whether a name of the answer (``words``) is the question's name ``option``: one holds the
    other, or it ends on the option's last word."""
    return set(option) <= set(words) or set(words) <= set(option) or option[-1] in words


def _is_asked(words: tuple[str, ...], asked: tuple[str, ...]) -> bool:
    """Whether a name of the answer (``words``) is the question's name ``asked``: part of it, or
    holding it whole when it is more than one word ("Canadian Screen Award" is not "Canadian")."""
    return set(words) <= set(asked) or (len(asked) > 1 and set(asked) <= set(words))


def _roots(stems: frozenset[str]) -> frozenset[str]:
    return frozenset(map(root, stems))


def _called(index: FocusIndex, words: frozenset[str]) -> tuple[frozenset[str], bool]:
    """What the context calls the name ``words`` (roots of the stems, :mod:`.answer_types`), and
    whether it says more of it than its own last word."""
    called = [c for key, c in index.called if words <= key]
    return (frozenset(root(w.removeprefix(OWN)) for c in called for w in c),
            any(not w.startswith(OWN) for c in called for w in c))


def _mistyped(index: FocusIndex, words: frozenset[str], focus: frozenset[str], head: frozenset[str],
              asked: set[str]) -> bool:
    """Whether the context calls the name ``words`` nothing the question's ``head`` asks for, while
    it calls another name, not the question's, what it asks for (:mod:`.answer_types`), and that
    name's sentences hold as much of the question's focus as this one's. A name the context says
    nothing of but its own words is judged so only against one or two such names."""
    roots = _roots(head)
    mine, said_of_it = _called(index, words)
    if mine & roots:
        return False
    theirs = [key for key, called in index.called
              if not key & words and not key & asked and not key <= index.lower_words  # ("Directed by ...")
              and _roots(frozenset(w.removeprefix(OWN) for w in called)) & roots]
    if not said_of_it and len(theirs) > 2:
        return False
    own = _score(index, words, focus) or (0, 0)
    return any((_score(index, k, focus) or (0, 0))[0] >= own[0] for k in theirs)


def _off(answer: str, name: Name) -> OffFocus:
    return OffFocus(name.start, name.end, answer[name.start:name.end])


_WORK_ROOTS = frozenset(map(root, WORK_NOUNS))


def _is_work(index: FocusIndex, words: frozenset[str]) -> bool:
    """Whether the context writes the name ``words`` in quotes (or a quoted title is part of it: "Hava
    Nagila of Israeli" read as one name) or calls it a work (:mod:`.works`)."""
    return any(words <= q or q <= words for q in index.quoted) or bool(_called(index, words)[0] & _WORK_ROOTS)


def _wrong_kind_of_work(index: FocusIndex, words: frozenset[str], head: frozenset[str], question: str,
                        asked: set[str]) -> bool:
    """A question asking for a work ("which movie") answered by a name the context neither quotes
    nor calls a work while it does so of another name, not the question's; or one asking "who"
    answered by a name the context only ever quotes, never calling it a person."""
    if asked_for := same_medium(_roots(head) & _WORK_ROOTS):
        # (the other name quoted or called what is asked: a film the question is about is no "show")
        return not _is_work(index, words) and any(
            any(k <= q for q in index.quoted) or _called(index, k)[0] & asked_for
            for k in {k for s in index.sentences for k in s.names}
            if not k & words and not k & asked and not k <= index.lower_words)
    if re.match(r"\s*who\b", question, re.IGNORECASE):
        mine = _called(index, words)[0]
        return any(words <= q for q in index.quoted) and PERSON not in mine and not mine - _WORK_ROOTS - {
            root(stem(w)) for w in words}
    return False
