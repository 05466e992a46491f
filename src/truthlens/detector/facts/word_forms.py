"""When two written words are one word of a name: demonyms, typos, clipped forms, plurals, state codes.

The name look-up (:mod:`.names`) asks whether a word of an answer's name is a word of a context name
written another way: a country and its adjective (``Italy`` / ``Italian``), one letter off in a long
word (``Sacracens`` / ``Saracens``) or in a name of three words, a US state and its people
(``Texas`` / ``Texans``), a word clipped or contracted beside words written in full (``Man City``,
``Newcastle Utd``), a plural, or a US state and its postal code.
"""

from __future__ import annotations

from collections.abc import Sequence

DEMONYMS = {
    "french": "france", "british": "britain", "dutch": "netherlands", "welsh": "wales", "spanish": "spain",
    "swiss": "switzerland", "english": "england", "irish": "ireland", "scottish": "scotland", "scots": "scotland",
    "greek": "greece", "danish": "denmark", "swedish": "sweden", "finnish": "finland", "polish": "poland",
    "turkish": "turkey", "norwegian": "norway", "chinese": "china", "thai": "thailand", "portuguese": "portugal",
    "filipino": "philippines", "icelandic": "iceland", "flemish": "flanders", "argentine": "argentina",
    "argentinian": "argentina", "peruvian": "peru", "czech": "czechia", "slovak": "slovakia",
}
# A state named in full is supported by its postal code and the other way round: records (the
# RAGTruth data-to-text shape) write "state": "CA" where an answer writes California.
US_STATES = {
    "alabama": "al", "alaska": "ak", "arizona": "az", "arkansas": "ar", "california": "ca", "colorado": "co",
    "connecticut": "ct", "delaware": "de", "florida": "fl", "georgia": "ga", "hawaii": "hi", "idaho": "id",
    "illinois": "il", "indiana": "in", "iowa": "ia", "kansas": "ks", "kentucky": "ky", "louisiana": "la",
    "maine": "me", "maryland": "md", "massachusetts": "ma", "michigan": "mi", "minnesota": "mn",
    "mississippi": "ms", "missouri": "mo", "montana": "mt", "nebraska": "ne", "nevada": "nv",
    "new hampshire": "nh", "new jersey": "nj", "new mexico": "nm", "new york": "ny", "north carolina": "nc",
    "north dakota": "nd", "ohio": "oh", "oklahoma": "ok", "oregon": "or", "pennsylvania": "pa",
    "rhode island": "ri", "south carolina": "sc", "south dakota": "sd", "tennessee": "tn", "texas": "tx",
    "utah": "ut", "vermont": "vt", "virginia": "va", "washington": "wa", "west virginia": "wv",
    "wisconsin": "wi", "wyoming": "wy",
}
US_STATE_CODES = {code: state for state, code in US_STATES.items()}
_DEMONYM_SUFFIXES = ("n", "an", "ian", "ean", "ese", "ish", "i", "ic", "ans", "ians", "eans", "y")


def _state_demonyms() -> dict[str, str]:
    """A one-word US state's people, by its last letter: "Texan(s)", "Californian(s)" or
    "Floridian(s)", "Ohioan(s)", "Mainer(s)", "Oregonian(s)" or "Vermonter(s)". Read for states
    only: "Lewis" / "Lewin" are two names."""
    endings = {"s": ("-n",), "a": ("n", "-ian"), "o": ("an",), "e": ("r",), "i": ("an",), "h": ("an",)}
    out = {}
    for state in (s for s in US_STATES if " " not in s):
        for ending in endings.get(state[-1], ("ian", "er")):
            form = state[:-1] + ending[1:] if ending.startswith("-") else state + ending
            out.update({form: state, form + "s": state})
    return out


_STATE_PEOPLE = _state_demonyms()


def word_matches(word: str, known: str) -> bool:
    if word == known:
        return True
    if DEMONYMS.get(word) == known or DEMONYMS.get(known) == word:
        return True
    if _STATE_PEOPLE.get(word) == known or _STATE_PEOPLE.get(known) == word:
        return True
    short, long_ = (word, known) if len(word) <= len(known) else (known, word)
    if len(short) < 4:
        return False
    # Italy / Italian, America / American, China / Chinese (not Aldrin / Aldridge)
    for head in (short, short[:-1]):
        if long_.startswith(head) and long_[len(head) :] in _DEMONYM_SUFFIXES:
            return True
    # A typo in a long name is the same name ("Sacracens" / "Saracens", "Wedensday"), one
    # letter off in a short one may be another name ("Aldrin" / "Aldric" stay apart).
    return len(short) >= 7 and _one_edit(word, known)


def clipped_form(words: Sequence[str], known: Sequence[str]) -> bool:
    """Whether ``words`` are ``known``'s, in its order, with one or more of them clipped and at
    least one in full: "Man City" / "Manchester City", "Newcastle Utd", "Sunset Blvd" (not "Air
    Cameroun" for "Cameroon Airlines")."""
    at, whole = 0, False
    for w in words:
        while at < len(known) and not (word_matches(w, known[at]) or _clipped(w, known[at])):
            at += 1
        if at == len(known):
            return False
        whole = whole or word_matches(w, known[at])
        at += 1
    return whole


def _clipped(short: str, word: str) -> bool:
    """Whether ``short`` is ``word`` clipped ("man" / "manchester") or contracted ("utd" / "united",
    "blvd" / "boulevard"): its letters in order, the first and, unless it is a prefix, the last."""
    if len(short) < 3 or len(word) < len(short) + 2 or short[0] != word[0]:
        return False
    if word.startswith(short):
        return True
    if short[-1] != word[-1]:
        return False
    letters = iter(word)
    return all(c in letters for c in short)


def one_word_misspelt(words: Sequence[str], known: frozenset[str]) -> bool:
    """Whether a name of three words or more (``words``) is the context name ``known`` with one of
    its words misspelt by one letter ("Braddock Carnegie Libray" / "Library"): the other words
    hold it to that name. Two-word names are left apart ("Tom Lewin" / "Tom Lewis")."""
    off = [w for w in words if w not in known]
    return len(words) >= 3 and len(off) == 1 and len(off[0]) >= 5 and any(
        _one_edit(off[0], k) for k in known if len(k) >= 5)


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one substitution, insertion, deletion or swap of neighbours."""
    if abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        swapped = i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]
        return swapped or a[i + 1 :] == b[i + 1 :]
    return a[i + 1 :] == b[i:] if len(a) > len(b) else a[i:] == b[i + 1 :]


def keys(word: str) -> set[str]:
    """Index keys under which a word that may match ``word`` is filed."""
    keys = {word[:3]}
    if word in DEMONYMS:
        keys.add(DEMONYMS[word][:3])
    keys.update(d[:3] for d, country in DEMONYMS.items() if country == word)
    return keys


def singular(words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


def plural_of(a: str, b: str) -> bool:
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 3 and long_ in (short + "s", short + "es")
