"""Relation words and their opposites, and where an answer clause reverses one of its context clause.

"after" where the context says "before", "decreased" for "increased", "closed" for "open": the
answer clause that restates a context clause (:mod:`.clauses` aligns them) with a word turned
into its opposite says the reverse. Not every opposite is a reversal: "A before B" is "B after
A", "Hull lose to Leeds" is "the win for Leeds over Hull", and a summary that orders two events
the other way round, or names the loser where the context names the winner, says the same
thing. :func:`reversed_word` tells them apart by where the word stands (:func:`.names.place`).
"""

from __future__ import annotations

import re

from truthlens.detector.facts.names import place, same_place
from truthlens.detector.text import STOP_WORDS

# Words and their opposites: the answer has one where the aligned context clause has the other.
_OPPOSITE_PAIRS = (
    "more/less more/fewer larger/smaller bigger/smaller greater/lesser higher/lower taller/shorter "
    "longer/shorter older/younger earlier/later before/after faster/slower heavier/lighter stronger/weaker "
    "wider/narrower deeper/shallower hotter/colder warmer/cooler richer/poorer cheaper/costlier better/worse "
    "best/worst largest/smallest biggest/smallest highest/lowest longest/shortest oldest/youngest "
    "earliest/latest increase/decrease increased/decreased increases/decreases increasing/decreasing rise/fall "
    "rose/fell risen/fallen gain/loss gained/lost won/lost win/lose wins/loses above/below inside/outside "
    "north/south east/west northern/southern eastern/western maximum/minimum open/closed opened/closed "
    "opens/closes allowed/banned allowed/prohibited accepted/rejected approved/rejected supported/opposed "
    "bought/sold buy/sell joined/left arrived/departed import/export imports/exports true/false "
    "positive/negative male/female husband/wife son/daughter father/mother brother/sister king/queen "
    "guilty/innocent legal/illegal private/public success/failure successful/unsuccessful safe/unsafe "
    "majority/minority include/exclude included/excluded entered/exited lowest/highest minimum/maximum "
    "upstream/downstream ascending/descending start/end started/ended began/ended first/last"
)
OPPOSITES: dict[str, frozenset[str]] = {}
for _pair in _OPPOSITE_PAIRS.split():
    _a, _b = _pair.split("/")
    OPPOSITES[_a] = OPPOSITES.get(_a, frozenset()) | {_b}
    OPPOSITES[_b] = OPPOSITES.get(_b, frozenset()) | {_a}
_WORD = re.compile(r"[^\W\d_]+")


def reversed_word(text: str, word: str, theirs: str, flipped: frozenset[str]) -> int | None:
    """Where the answer clause ``text`` has ``word`` reversed: where it stands as one of its
    opposites ``flipped`` stands in the context clause ``theirs`` it restates (its offset in
    ``text``), or None. A reversal keeps the word's neighbours: the same content word before or
    after both (:func:`.names.place`: "four breaks of serve after the tie-break" for "... before
    the tie-break"). A converse puts other words beside it ("won the tie-break after four breaks of
    serve" for "four breaks of serve before the tie-break"), or a name on its other side ("Hull
    lose to Leeds": Hull stands after "win" in "the win for Leeds over Hull"). Nor is the
    opposite the context says of another subject, each side naming before the word what the
    other does not name ("Southwest has the highest share" beside "JetBlue had the lowest")."""
    hit = re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE)
    if hit is None:
        return None
    mine_place = place(text, hit.start(), hit.end())
    mine_sides = _named(text[:hit.start()]), _named(text[hit.end():])
    mine_all, their_all = _named(text), _named(theirs)
    for other in sorted(flipped):
        for m in re.finditer(rf"\b{re.escape(other)}\b", theirs, re.IGNORECASE):
            before, after = _named(theirs[:m.start()]), _named(theirs[m.end():])
            crossed = (mine_sides[0] & after) - before or (mine_sides[1] & before) - after
            # Each with a subject the other does not name: another thing's opposite ("Southwest
            # ... the highest percentage" beside "JetBlue, which offered the lowest percentage").
            apart = bool(mine_sides[0] - their_all) and bool(before - mine_all)
            if not crossed and not apart and same_place(mine_place, place(theirs, m.start(), m.end())):
                return hit.start()
    return None


def _named(text: str) -> set[str]:
    """The capitalised words of ``text`` but stop words, lower case."""
    return {w.lower() for w in _WORD.findall(text) if w[0].isupper() and w.lower() not in STOP_WORDS}
