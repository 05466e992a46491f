"""Whether a name of the context is a work (a film, a song, a book): the kind a "which film" question asks for.

"Which movie starring Christian Slater was produced by Mark Gordon?" - "It was Mikael Salomon."
The context writes the films it lists in quotes ('"Broken Arrow", and "Hard Rain"') or calls
them so ("Hard Rain is a 1998 action-thriller disaster film"), and the answer's name is
neither: a person, a place, something other than what was asked. The reverse holds too: "Who
..." answered by a name the context only ever writes in quotes names a work, not a person.

:func:`work_names` reads the names a context writes alone inside double quotes; :data:`WORK_NOUNS`
are the nouns a question asks for a work by (stems). What the context calls each name
(:mod:`.answer_types`) counts too: a name it calls a film is a work, quoted or not.

What it cannot see: a work the context writes without quotes and without saying what it is (the
answer is then not judged), and a quoted name that is no work (a nickname: "Jungle Jim").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from truthlens.detector.facts.names import find_names
from truthlens.detector.text import stem

# The nouns a question asks for a work by ("which movie", "what television show", "the first book").
WORK_NOUNS = frozenset(stem(form) for w in (
    "film", "movie", "show", "series", "sitcom", "song", "album", "book", "novel", "musical",
    "episode", "opera", "poem", "documentary", "soundtrack", "videogame", "miniseries", "telenovela", "anime",
    "manga", "comic", "magazine", "newspaper") for form in (w, w + "s"))  # ("which of the movies": "movy")
# Nouns of one medium: "which movie" is answered by what the context calls a film, "what
# television show" by a series (stems).
_MEDIA = tuple(frozenset(stem(f) for w in group.split() for f in (w, w + "s")) for group in (
    "film movie picture", "show series sitcom programme program miniseries", "book novel"))
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{1,100})[\"”]")
_LOWER = re.compile(r"\b[a-z]")
_TITLE_WORDS = 8


def work_names(passages: Iterable[str], lower_words: frozenset[str]) -> frozenset[frozenset[str]]:
    """The words of each name the ``passages`` write inside double quotes."""
    out: set[frozenset[str]] = set()
    for passage in passages:
        # (an empty pair, a title the source lost: '"", "Broken Arrow"', would pair every quote after it wrongly)
        for m in _QUOTED.finditer(passage.replace('""', "  ")):
            inside = m.group(1).strip(" ,.!?")
            found = [n for n in find_names(inside, lower_words, skip_sentence_starts=False) if n.words]
            # A title and nothing else: names open and close the quotes, no lower-case word before
            # or after them, few words ("Places in the Heart" is two names: one title). A straight
            # quote pairs with the wrong one often enough ('"Toy Story 2". Many ... "Rocky"').
            if (found and len(inside.split()) <= _TITLE_WORDS and not _LOWER.search(inside[:found[0].start])
                    and not _LOWER.search(inside[found[-1].end:])):
                out.add(frozenset(w for n in found for w in n.words))
    return frozenset(out)


def same_medium(nouns: Iterable[str]) -> frozenset[str]:
    """The work nouns (stems) ``nouns`` and the others of the same medium ("movie": "film")."""
    nouns = frozenset(nouns)
    return nouns.union(*(group for group in _MEDIA if group & nouns))
