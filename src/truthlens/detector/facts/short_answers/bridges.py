"""A short answer naming the wrong one of the names a sentence lists together: the bridge check.

"Which Navy veteran starred in the 1995 film Journey?" - "Brenda Fricker." The context has
"The film ... starred Jason Robards, Brenda Fricker and Meg Tilly" and, about Robards alone,
"He was also a United States Navy combat veteran of World War II." The question hops over two
facts: the film (the sentence listing both names, the bridge) and the veteran (a sentence about
one of them). The answer's name is in the bridge, so a look-up calls it supported, and it is the
same kind of thing as the right one, so what the context calls it says nothing either. A reader
picks the listed name that the rest of the question is said of.

:func:`bridged_elsewhere` does the same, by rule: each name is scored by the most of the
question's words (stems, the question's own names' words included, stop words not) that one
context sentence mentioning it holds (by a word of its name: "Dunne was nominated five times";
a sentence opening on a pronoun speaks of the names of the sentence before: :mod:`.focus`). An
answer's name is the wrong one when a name listed with it (:func:`listed`: joined by commas,
"and", "or"; neither the question's own name nor sharing a word with the answer's) is mentioned,
without the answer's name, in a sentence holding :data:`MARGIN` or more of the question's words
than any sentence mentioning the answer's name.

What it cannot see: a second hop the context states in words other than the question's, or in a
sentence that mentions both names; names of one kind not written as a list ("directed by A, with
a screenplay by B"); a question asking for the name the second hop is not said of ("which host
is not married to ...").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from truthlens.detector.facts.names import Name


class Sentence(Protocol):
    """What a bridge reads of a context sentence (:class:`.focus.FocusIndex`'s)."""

    @property
    def words(self) -> frozenset[str]: ...
    @property
    def names(self) -> tuple[frozenset[str], ...]: ...
    @property
    def carried(self) -> tuple[frozenset[str], ...]: ...
    @property
    def carried_words(self) -> frozenset[str]: ...


class Index(Protocol):
    """What a bridge reads of the context (:class:`.focus.FocusIndex`: this module serves it,
    so it names the fields rather than importing it)."""

    @property
    def sentences(self) -> Sequence[Sentence]: ...
    @property
    def lists(self) -> tuple[frozenset[frozenset[str]], ...]: ...
    @property
    def lower_words(self) -> frozenset[str]: ...

_LIST_GAP = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+|&\s*)")
_CONJUNCTION = re.compile(r"\b(?:and|or)\b|&")
# A question asking for the name the hop is not said of ("Apart from the founder of ..., who ...",
# "which host is not married to ..."): the sibling the rest of it is said of is the wrong one.
_EXCLUDING = re.compile(r"\b(?:apart\s+from|other\s+than|aside\s+from|besides|except|not|never)\b|n't\b", re.IGNORECASE)
MARGIN = 2  # question words a listed sibling's own sentence holds beyond the answer's best sentence


def listed(text: str, names: Sequence[Name]) -> list[frozenset[frozenset[str]]]:
    """The lists of ``text``'s names (``names`` in order): runs of two or more joined by nothing but
    commas, "and", "or" ("starred Jason Robards, Brenda Fricker and Meg Tilly"), with "and", "or"
    or "&" among the joins (names joined by commas alone are a place and what holds it, or a
    name and its apposition: "Ithaca, New York, United States")."""
    out: list[frozenset[frozenset[str]]] = []
    run: list[frozenset[str]] = []
    joined = False
    for i, n in enumerate(names):
        gap = _LIST_GAP.fullmatch(text, names[i - 1].end, n.start) if i else None
        if gap:
            run.append(frozenset(n.words))
            joined = joined or bool(_CONJUNCTION.search(gap.group(0)))
            continue
        if len(run) > 1 and joined:
            out.append(frozenset(run))
        run, joined = [frozenset(n.words)], False
    if len(run) > 1 and joined:
        out.append(frozenset(run))
    return out


def excludes(question: str) -> bool:
    """Whether ``question`` asks for the name the hop is not said of ("Apart from ...")."""
    return _EXCLUDING.search(question) is not None


def _best(index: Index, name: frozenset[str], question: frozenset[str],
          without: frozenset[str] = frozenset()) -> int:
    """The most question words one sentence mentioning ``name`` holds (-1: none mentions it),
    sentences mentioning ``without`` left out."""
    best = -1
    for s in index.sentences:
        direct = any(name & k for k in s.names)
        carried = not direct and any(name & k for k in s.carried)
        if not (direct or carried):
            continue
        if without and (any(without & k for k in s.names) or any(without & k for k in s.carried)):
            continue
        words = s.words if direct else s.carried_words
        best = max(best, len(question & (words - name)))
    return best


def bridged_elsewhere(index: Index, name: frozenset[str], question: frozenset[str],
                      asked: set[str], excluding: bool = False) -> bool:
    """Whether a name listed with ``name`` has a sentence of its own holding :data:`MARGIN` more of
    the ``question``'s words (stems) than any sentence of ``name`` (the module note); never for a
    question ``excluding`` what the hop says (:func:`excludes`)."""
    if not question or excluding:
        return False
    mine = _best(index, name, question)
    if mine < 0:
        return False
    siblings = {k for group in index.lists if any(name & n for n in group) for k in group
                if not k & name and not k & asked and not k <= index.lower_words}
    return any(_best(index, k, question, name) >= mine + MARGIN or _second_hop(index, name, k, question)
               for k in siblings)


def _second_hop(index: Index, name: frozenset[str], sibling: frozenset[str], question: frozenset[str]) -> bool:
    """Whether the question's words that the bridge leaves unsaid (those of no sentence mentioning
    both names) are said of ``sibling`` in a sentence of its own, :data:`MARGIN` more of them than
    in any sentence of ``name``: the hop is scored on what is left to say, not on the words the
    two names' shared sentence already gives both (a long bridge sentence outweighs a short one
    about the sibling alone: "Walter Darwin Coy ... narrator of "Frontier"")."""
    shared = [s.words for s in index.sentences
              if any(name & k for k in s.names) and any(sibling & k for k in s.names)]
    if not shared:
        return False
    rest = question.difference(*shared)
    # (a name with no sentence but the bridge scores -1: one word of the rest in the sibling's own will do)
    return _best(index, sibling, rest, name) >= _best(index, name, rest, sibling) + MARGIN
