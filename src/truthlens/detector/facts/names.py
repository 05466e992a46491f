"""Names in text (runs of capitalised words) and whether a context names the same ones.

A name is supported when every one of its words occurs in one name of the context
(``Collins`` in ``Michael Collins``; ``Neil Collins`` is not supported by ``Neil Armstrong``
and ``Michael Collins``), or the whole name occurs in the text, case-insensitively with
possessives stripped; demonyms match their country (``Italian`` / ``Italy``), an acronym the
initials of a context name, and a long word one typo away matches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from truthlens.detector.facts.implied import WEEKDAYS
from truthlens.detector.facts.numbers import MONTHS, NUMBER_WORDS, UNIT_WORDS
from truthlens.detector.facts.word_forms import (
    US_STATE_CODES,
    US_STATES,
    clipped_form,
    keys,
    one_word_misspelt,
    plural_of,
    singular,
    word_matches,
)
from truthlens.detector.text import is_stop_word, stem

# Capitalised words that are not names: function words a sentence may start with, pronouns,
# titles of address and similar (months, weekdays and number words are skipped too).
_NOT_NAMES = frozenset("""
a an the this that these those there here it its it's he she they we i you his her hers their theirs
our ours my mine your yours him them us me who whom whose what which when where why how whoever
in on at for from with by as of to into onto upon about above across after against along among around
before behind below beneath beside besides between beyond during except inside near off out outside
over past since through throughout till toward towards under underneath until unlike up via within
without according although though because if unless while whereas whether and or but nor so yet also
both either neither each every all any some many most much more few several such other another same no
not none yes yeah ok okay however therefore thus hence then than still already also instead indeed
meanwhile moreover furthermore nevertheless nonetheless otherwise later earlier today yesterday
tomorrow now once twice first second third last next finally initially originally currently recently
despite like just only even perhaps maybe probably certainly actually generally usually often
sometimes always never mr mrs ms dr prof sir st saint mt mount lord lady king queen prince princess
president senator governor general captain
former ex director chairman chairwoman chief minister secretary spokesman spokeswoman spokesperson
manager coach boss midfielder striker defender goalkeeper winger rivals actor actress singer rapper
star veteran officer police sergeant detective judge professor
ceo cfo cto coo cio cmo cso vp svp evp chair chairman chairperson founder cofounder co-founder
click here read watch scroll video photos update breaking exclusive usd eur gbp jpy
am pm passage passages
""".split())
_SUBJECT_FOLLOWERS = frozenset(
    "is was has had will would can could did does may might should must and or".split()
)
# Lower-case words inside a name ("Bank of England", "Ludwig van Beethoven"); "and" is not one:
# "Armstrong and Collins" are two names.
CONNECTORS = frozenset("of the de da di del della der den du la le van von y bin al für".split())
# "RestaurantsReservations", "BusinessAcceptsCreditCards": a record's keys run words together.
_RUN_TOGETHER = re.compile(r"\b[A-Z]?[a-z]+(?:[A-Z][a-z]+)+\b")


@dataclass(frozen=True, slots=True)
class Name:
    start: int
    end: int
    words: tuple[str, ...]  # lower case, possessives stripped, connectors dropped
    phrase: str  # the name as written, lower case, possessive stripped ("love the way")


# Words: acronyms with dots ("U.S."), else letters/digits/apostrophes; hyphens split words
# ("Group-owned" is two, and "Jean-Paul" a name of two capitalised words).
TOKEN = re.compile(r"(?:[A-Za-z]\.){2,}|[^\W\d_][\w'’]*", re.UNICODE)


def _starts_sentence(text: str, start: int) -> bool:
    j = start - 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    # Quotes and brackets are left out: "Frontier" in quotes is a title, not a sentence; but a
    # quotation that ends a sentence ('called it "a treat." Overall, ...') ends it.
    k = j
    while k >= 0 and text[k] in _CLOSING:
        k -= 1
    if k < j and k >= 0 and text[k] in ".!?" and j + 1 < start:
        return True
    return j < 0 or text[j] in ".!?:;\n-–—•*>#"


_CLOSING = "\"'”’)]"
# What opens a list item or an instruction: "3. ", "* ", "- ", or a colon.
_ITEM_OPENING = re.compile(r"(?:(?:^|\n)\s*(?:\(?\d{1,2}[.)]|[-*•])|:)\s*\Z")
# A number and its unit before a word ("30 degrees Celsius", "20 °F"): the word is a unit too.
_AFTER_A_NUMBER = re.compile(r"(?:\d|°|\bdegrees?)\s*\Z", re.IGNORECASE)


def _is_capitalised(word: str) -> bool:
    return word[0].isupper()


# A weekday, month or cardinal number word written right after a name's word ends that name, when
# the caller asks (:func:`find_names`' ``tails``): "Good Friday", "League One", "James May".
_TAILS = frozenset(
    WEEKDAYS | {m for m in MONTHS if len(m) > 3 or m == "may"}
    | {w for w in NUMBER_WORDS if not w.endswith(("th", "st", "nd", "rd")) and w not in ("hundred", "dozen")}
)


def find_names(text: str, lower_words: frozenset[str], *, skip_sentence_starts: bool,
               tails: bool = False, through_initials: bool = False) -> list[Name]:
    """Runs of capitalised words (with connectors such as "of" inside) in ``text``. With ``tails``,
    a capitalised weekday, month or number word right after a name's word is its last word
    ("Holy Saturday" is not "Holy Week", nor "League Two" "League One"); without, it ends the
    name before it (the look-ups read "told CNN Monday" as "CNN" and a day). With
    ``through_initials`` (a context's names), a middle initial joins its name and is left out of
    its words: "Thomas R. Kelly" names "Thomas Kelly" (an answer's initial the context does not
    write, "Sammy J. Wilson" for "Sammy Wilson", stays a word to look up)."""
    tokens = list(TOKEN.finditer(text))
    names: list[Name] = []
    run: list[re.Match[str]] = []

    def flush() -> None:
        while run and run[-1].group(0).lower() in CONNECTORS:
            run.pop()
        if run:
            # A middle initial says no more than its name's other words ("Thomas R. Kelly" is "Thomas Kelly").
            words = tuple(_clean(t.group(0)) for t in run if t.group(0).lower() not in CONNECTORS
                          and not (through_initials and t is not run[-1] and _initial(text, t)))
            end = run[-1].start() + len(_strip_possessive(run[-1].group(0)))
            phrase = " ".join(text[run[0].start() : end].lower().split())
            names.append(Name(run[0].start(), end, tuple(w for w in words if w), phrase))
        run.clear()

    for i, tok in enumerate(tokens):
        word = tok.group(0)
        if run and not _adjacent(text, run[-1].end(), tok.start()) and not (
                through_initials and _initial(text, run[-1]) and text[run[-1].end():tok.start()] == ". "
                and _is_capitalised(word) and word.lower() not in _NOT_NAMES):
            flush()
        if not word[0].isupper() and not run:
            continue  # the common case in running text: nothing to start or end
        lower = word.lower().rstrip(".")
        if _is_capitalised(word):
            at_start = skip_sentence_starts and not run and _starts_sentence(text, tok.start())
            bare = _strip_possessive(lower)
            if (tails and run and bare in _TAILS and _strip_possessive(run[-1].group(0)) == run[-1].group(0)
                    and text[run[-1].end():tok.start()] == " "):
                run.append(tok)
                flush()
                continue
            # ("Sunday's race" names a day; "May's" may be Theresa May's, a name.)
            if (bare in _NOT_NAMES or lower in MONTHS or bare in WEEKDAYS or lower in NUMBER_WORDS
                    or lower.removesuffix("s") in WEEKDAYS
                    or (lower in UNIT_WORDS and _AFTER_A_NUMBER.search(text, 0, tok.start()))):
                flush()
                continue
            if at_start and (_written_lower(_clean(word), lower_words) or _lone_opener(text, tokens, i)):
                continue  # "Stayed ..." at a sentence start: a common word, capitalised by position
            run.append(tok)
            if _strip_possessive(word) != word and not _name_goes_on(text, tokens, i):
                flush()  # "Mumbai's mayor": the possessive ends a name
        elif run and lower in CONNECTORS and i + 1 < len(tokens) and _is_capitalised(tokens[i + 1].group(0)):
            run.append(tok)
        elif run:
            flush()
    flush()
    # One letter ("Coach K", "Plan B") is too little to look up.
    return [n for n in names if n.words and (len(n.words) > 1 or len(n.words[0]) > 1)]


def _written_lower(word: str, lower_words: frozenset[str]) -> bool:
    """Whether ``word`` (or its plural, or its singular: "Users" / "user", "Survivor" / "survivors")
    is among the words a text writes in lower case."""
    forms = {word, word + "s", word + "es"} if len(word) > 3 else {word}  # "New" is not "news"
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        forms |= {word[:-1], word[:-2] if word.endswith("es") else word[:-1]}
    return bool(forms & lower_words)


def _initial(text: str, tok: re.Match[str]) -> bool:
    """Whether ``tok`` is an initial: one capital letter (not "I") and a full stop."""
    word = tok.group(0)
    return len(word) == 1 and word.isupper() and word != "I" and text.startswith(".", tok.end())


def _name_goes_on(text: str, tokens: Sequence[re.Match[str]], i: int) -> bool:
    """Whether a possessive is inside one name ("World's Fair", "Women's World Cup"): the next
    word follows it directly and is capitalised. (Two names so joined, "Rihanna's Loud", are
    still supported word by word: every word in one name, or the two names given in full.)"""
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    return (nxt is not None and _adjacent(text, tokens[i].end(), nxt.start()) and _is_capitalised(nxt.group(0))
            and nxt.group(0).lower() not in _NOT_NAMES)


def _adjacent(text: str, end: int, start: int) -> bool:
    return text[end:start] in (" ", "-")


def _lone_opener(text: str, tokens: Sequence[re.Match[str]], i: int) -> bool:
    """A single capitalised word opening a sentence ("Exactly 1,600 ...", "Answer 3."): without
    a dictionary it cannot be told from a one-word name, and it is far more often a common
    word, so it is not checked. Two capitalised words ("Buzz Aldrin stayed") and acronyms are."""
    word = tokens[i].group(0)
    if (len(word) > 1 and word.isupper()) or _strip_possessive(word) != word:
        return False  # "NASA ...", "Mumbai's ..."
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if nxt is None:
        # The answer's last sentence is this one word ("Mumbai."): a name, checked.
        return text[tokens[i].end() :].strip(" .!?\"'”’)") != ""
    if (_adjacent(text, tokens[i].end(), nxt.start()) and _is_capitalised(nxt.group(0))
            and nxt.group(0).lower() not in _NOT_NAMES):
        return False
    # "Massaging and rinsing ...", "1. Press and hold ...": two actions joined by "and"/"or", the
    # second in lower case: both "-ing" forms, or an instruction opening a list item or following a
    # colon (names are joined to names, "Mumbai and Delhi", or to common nouns, "Colgate and others").
    after = tokens[i + 2] if i + 2 < len(tokens) else None
    if (nxt.group(0) in ("and", "or") and after is not None and _adjacent(text, tokens[i].end(), nxt.start())
            and _adjacent(text, nxt.end(), after.start()) and not _is_capitalised(after.group(0))
            and ((word.endswith("ing") and after.group(0).endswith("ing"))
                 or _ITEM_OPENING.search(text, 0, tokens[i].start()))):
        return True
    # "Mumbai is ...", "Mumbai and Delhi": a subject before a verb is a name far more often
    # than "Exactly 1,600 ..." is.
    return not (_adjacent(text, tokens[i].end(), nxt.start()) and nxt.group(0) in _SUBJECT_FOLLOWERS)


def _strip_possessive(word: str) -> str:
    if "'" not in word and "’" not in word:
        return word
    for suffix in ("'s", "’s"):
        if word.endswith(suffix) and len(word) > len(suffix):
            return word[: -len(suffix)]
    return word.rstrip("'’") or word


def _clean(word: str) -> str:
    return _strip_possessive(word).lower().replace(".", "")


def lower_case_words(text: str) -> frozenset[str]:
    """The words ``text`` writes in lower case (so a capitalised one opening a sentence is a
    common word, not a name)."""
    return frozenset(_clean(t) for t in TOKEN.findall(text) if not _is_capitalised(t))


@dataclass(frozen=True, slots=True)
class KnownNames:
    """The names and words a context states, indexed for the answer's look-ups."""

    text: str  # lower case, whitespace collapsed
    lower_words: frozenset[str]  # words the context uses in lower case
    words: dict[str, frozenset[str]]  # every word, by its first three letters
    names: tuple[frozenset[str], ...]  # each capitalised run's words
    full_names: frozenset[tuple[str, ...]]
    names_by_word: dict[str, tuple[int, ...]]  # index into names, by a word's first three letters
    initials: frozenset[str]
    # Two-letter words written in capitals ("CA"): a state's code, never "in" or "or".
    codes: frozenset[str] = frozenset()
    # full_names, each word in its singular: "Chicago Bull Derrick Rose" joins "the Chicago Bulls"
    # and "Derrick Rose" (a team's player named by the team's noun).
    singular_full_names: frozenset[tuple[str, ...]] = frozenset()
    # Each of names in its words' order (a clipped form keeps it: "Man City", not "City Man").
    ordered: tuple[tuple[str, ...], ...] = ()
    # Words written in capitals ("U.S.", "EU", "NASA"), dots dropped: the initials of a name the
    # answer may spell out ("the United States").
    acronyms: frozenset[str] = frozenset()

    @staticmethod
    def of(source: str) -> KnownNames:
        apart = [re.sub(r"(?<=[a-z])(?=[A-Z])", " ", key) for key in _RUN_TOGETHER.findall(source)]
        if apart:  # the keys' words written apart, as an answer writes them
            source = source + "\n" + ".\n".join(apart)
        raw = TOKEN.findall(source)
        tokens = [_clean(t) for t in raw]
        runs = find_names(source, frozenset(), skip_sentence_starts=False, through_initials=True)
        names = [frozenset(n.words) for n in runs]
        words: dict[str, set[str]] = {}
        for w in tokens:
            words.setdefault(w[:3], set()).add(w)
        by_word: dict[str, set[int]] = {}
        for i, name in enumerate(names):
            for w in name:
                by_word.setdefault(w[:3], set()).add(i)
        return KnownNames(
            text=" " + re.sub(r"\s+", " ", source.lower()) + " ",
            lower_words=frozenset(w for t, w in zip(raw, tokens, strict=True) if not _is_capitalised(t)),
            words={k: frozenset(v) for k, v in words.items()},
            names=tuple(names),
            full_names=frozenset(n.words for n in runs),
            names_by_word={k: tuple(sorted(v)) for k, v in by_word.items()},
            initials=frozenset("".join(w[0] for w in n.words) for n in runs if len(n.words) > 1),
            codes=frozenset(t.lower() for t in raw if len(t) == 2 and t.isupper()),
            singular_full_names=frozenset(singular(n.words) for n in runs),
            ordered=tuple(n.words for n in runs),
            acronyms=frozenset(w for t, w in zip(raw, tokens, strict=True) if len(w) > 1 and t.isupper()),
        )

    def states(self, surface: str) -> bool:
        """Whether the context writes ``surface`` as it stands (case and spacing aside)."""
        return " ".join(surface.lower().split()) in self.text

    def supports(self, name: Name) -> bool:
        for phrase in {name.phrase, " ".join(name.words)}:
            if re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", self.text):
                return True
        words = " ".join(name.words)
        if US_STATES.get(words) in self.codes:
            return True
        state = US_STATE_CODES.get(words)
        if state is not None and re.search(r"(?<!\w)" + state + r"(?!\w)", self.text):
            return True
        first = name.words[0]
        for i in self._candidates(first, self.names_by_word):
            known = self.names[i]
            if all(any(word_matches(w, k) for k in known) for w in name.words):
                return True
            if len(name.words) > 1 and clipped_form(name.words, self.ordered[i]):
                return True
            if one_word_misspelt(name.words, known):
                return True
        if len(name.words) > 1 and self._spelled_out(name):
            return True
        if len(name.words) == 1:
            if first in self.initials:  # NASA, UN
                return True
            if first.endswith("s") and first[:-1] in self.acronyms:  # "TVs" where the context writes "TV"
                return True
            return any(word_matches(first, k) for key in keys(first) for k in self.words.get(key, ()))
        return self._joins_full_names(name.words)

    def _spelled_out(self, name: Name) -> bool:
        """Whether a name of two words or more spells out the context's initials ("the United
        States" for "the U.S."; connectors included after words the context writes before them:
        "Secret Head of Household" for "Secret HOH") or is a context word written apart ("Super
        Bowl" for "Superbowl")."""
        if "".join(w[0] for w in name.words) in self.acronyms:
            return True
        words = name.phrase.split()
        joined = "".join(words)
        if joined in self.words.get(joined[:3], ()):
            return True
        return any(self.states(" ".join(words[:k])) if k else True
                   for k in range(len(words) - 1) if "".join(w[0] for w in words[k:]) in self.acronyms)

    def _joins_full_names(self, words: tuple[str, ...]) -> bool:
        """"Rhode Island NBC": two names the context gives in full, written side by side. Parts
        of names do not count, else "Neil Collins" would pass on "Neil Armstrong" and "Michael Collins"."""
        if not words:
            return True
        # In the singular only before another name (a team's noun before its player's name): a
        # name alone one letter off is another name ("John Hopkins" / "Johns Hopkins").
        return any((words[:k] in self.full_names
                    or (k < len(words) and singular(words[:k]) in self.singular_full_names))
                   and self._joins_full_names(words[k:]) for k in range(len(words), 0, -1))

    @staticmethod
    def _candidates(word: str, index: dict[str, tuple[int, ...]]) -> set[int]:
        return {i for key in keys(word) for i in index.get(key, ())}


def same_entity(a: str, b: str) -> bool:
    """Whether two names as written may be one entity written two ways: one the other's acronym
    ("POV" / "Power of Veto", "CME" / "Coronal Mass Ejection"), or every word of the shorter
    matching a word of the longer as a demonym, plural or typo of it ("Australian" / "Australia",
    "Houthis" / "Houthi"; numbers must be equal: "Apollo 11" is not "Apollo 12"). A summary often
    spells out what its article abbreviates, or names a country where the article uses its adjective."""
    x, y = _surface_words(a), _surface_words(b)
    if not x or not y:
        return False
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    if len(short) == 1 and len(long_) > 1:
        initials = {"".join(w[0] for w in long_), "".join(w[0] for w in long_ if w not in CONNECTORS)}
        if short[0] in initials:
            return True
    return all(any(same_word(w, k) for k in long_) for w in short if w not in CONNECTORS)


def same_word(a: str, b: str) -> bool:
    """One word in two forms: equal, a demonym of the other or its plural. Two words of one length
    are two names ("Bobby" / "Bobbi"), whatever :func:`word_matches` lets a look-up accept."""
    if a == b:
        return True
    if a.isdigit() or b.isdigit() or len(a) == len(b):
        return False
    return plural_of(a, b) or word_matches(a, b)


def _surface_words(text: str) -> list[str]:
    return [_clean(t) for t in re.findall(r"(?:[A-Za-z]\.){2,}|[\w'’]+", text)]


# Titles of address stand inside a name's place, not beside it ("Mr Jones" is where "Dominique
# Jackson" would be).
_ADDRESS = frozenset("mr mrs ms miss dr prof sir dame lord lady st".split())
_PLACE_WORD = re.compile(r"[\w'’]+")
# What stands before the agent of a passive verb ("was flown by ", "led by the ").
PASSIVE_AGENT = re.compile(
    r"\b(?:\w+(?:ed|en|wn|ght)|made|led|held|won|built|sold|run|done|set|hit)\s+by\s+(?:the\s+)?\Z", re.IGNORECASE
)


def place(text: str, start: int, end: int, bounds: tuple[int, int] = (0, -1), *,
          past_names: bool = False, past_possessive: bool = False) -> tuple[str, str]:
    """Where ``text[start:end]`` (a name, a number) stands in its clause ``text[bounds[0]:bounds[1]]``:
    the content words right before and after it, stemmed ("" at the clause's edge, and before the
    agent of a passive verb: "Columbia was flown by Michael Collins" says who flew it, as
    "Michael Collins flew Columbia" does). Stop words, titles of address and lone apostrophes are
    passed over ("the", "and" or "of" next to a name say nothing of its place, so "the Pope" and
    "the Turkish Foreign Ministry" share none); with ``past_possessive``, so is the name's own
    possessive ("the County Attorney's office": "office" stands after it, as it does after "the
    County Jail's"; not where a word on either side will do, :func:`same_place`'s ``reworded``:
    "De Bruyne's agent" is not "agent Patrick De Koster"); with ``past_names``, other names too ("the capital
    of Australia is Sydney": Sydney stands beside "capital")."""
    low, high = bounds[0], len(text) if bounds[1] < 0 else bounds[1]

    def marks(word: str) -> bool:
        w = word.lower().strip("'’")
        if past_possessive and word[0] in "'’" and w == "s":
            return False
        return bool(w) and not is_stop_word(w) and w not in _ADDRESS and not (past_names and word[0].isupper())

    before = [w for w in _PLACE_WORD.findall(text, low, start) if marks(w)]
    after = [w for w in _PLACE_WORD.findall(text, end, high) if marks(w)]
    opens = not before or PASSIVE_AGENT.search(text, low, start) is not None
    return ("" if opens else stem(before[-1]), stem(after[0]) if after else "")


def same_place(a: tuple[str, str], b: tuple[str, str], *, reworded: bool = False) -> bool:
    """Whether two :func:`place` results put their names in one place: the same content word
    before them, or after them. ``reworded`` allows what a paraphrase changes: the word on the
    other side ("Sydney is the capital" and "the capital is Canberra"), or both opening their
    clause (its subject, or a passive verb's agent)."""
    if reworded:
        return bool(({*a} & {*b}) - {""}) or (a[0] == "" and b[0] == "")
    return any(x and x == y for x, y in zip(a, b, strict=True))
