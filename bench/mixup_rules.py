"""The rules :mod:`bench.mixups` writes its answers by: wrong ones (a fact of the context put in
the wrong place), faithful ones (a context sentence said another way), each from one sentence of
a real context.

The generator reads text with its own small patterns (sentences, names, years, counts, units),
not the detector's (:mod:`truthlens.detector.text`), so what the detector is measured on is not
shaped by what it reads.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Case:
    """One generated answer. ``start:end`` are the answer's changed characters (wrong answers)."""

    kind: str
    wrong: bool
    context: tuple[str, ...]
    question: str
    answer: str
    start: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class Source:
    key: str
    context: tuple[str, ...]
    question: str
    sentences: tuple[str, ...]  # the context's plain sentences, 6 to 45 words


# --- the generator's own reading of text (independent of the detector's) -----------------

SENTENCE_CUT = re.compile(r"(?<=[a-z0-9%)\"'][.!?])\s+(?=[A-Z\"'])")
_YEAR = re.compile(r"(?<![\w.,$£€-])(1[5-9]\d\d|20[0-4]\d)(?![\w%-]|[.,]\d)")
_COUNT = re.compile(r"(?<![\w.,$£€:/-])(\d{1,3}(?:,\d{3})+|\d+)(?![\w:/%-]|[.,]\d)")
_NAME = re.compile(r"(?<![\w.])[A-Z][a-z]+(?:[ -](?:of |de |van |von )?[A-Z][a-z]+)+(?![\w-])")
_AUX_NOT = re.compile(r"\b(is|are|was|were|has|have|had|can|could|will|would|should|does|do|did) not\b")
_AUX = re.compile(r"\b(is|are|was|were|can|could|will|would|should)\b(?! not\b| n't)")
_MONTHS = ("January February March April May June July August September October November "
           "December").split()
_DATE_MDY = re.compile(r"\b(" + "|".join(_MONTHS) + r") (\d{1,2}), (\d{4})\b")
_DATE_DMY = re.compile(r"\b(\d{1,2}) (" + "|".join(_MONTHS) + r") (\d{4})\b")
_OPPOSITES = (
    ("more", "less"), ("higher", "lower"), ("larger", "smaller"), ("bigger", "smaller"), ("older", "younger"),
    ("earlier", "later"), ("before", "after"), ("longer", "shorter"), ("increased", "decreased"),
    ("rose", "fell"), ("above", "below"), ("faster", "slower"), ("greater", "smaller"), ("heavier", "lighter"),
    ("stronger", "weaker"), ("cheaper", "more expensive"), ("wider", "narrower"), ("better", "worse"),
    ("largest", "smallest"), ("highest", "lowest"), ("oldest", "youngest"),
    ("increase", "decrease"), ("gained", "lost"), ("won", "lost"), ("warmer", "colder"),
)
_OPPOSITE = {a: b for a, b in _OPPOSITES} | {b: a for a, b in _OPPOSITES if b not in {"smaller", "lost"}}
_COMPARATIVE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _OPPOSITE), key=len, reverse=True)) + r")\b")
_UNITS = (
    ("km", "miles"), ("kilometres", "miles"), ("kilometers", "miles"), ("miles", "kilometres"), ("metres", "feet"),
    ("meters", "feet"), ("feet", "metres"), ("kg", "pounds"), ("kilograms", "pounds"), ("pounds", "kilograms"),
    ("percent", "points"), ("%", " million"), ("hours", "minutes"), ("minutes", "hours"), ("days", "weeks"),
    ("weeks", "months"), ("months", "years"), ("years", "months"), ("million", "billion"), ("billion", "million"),
    ("acres", "hectares"), ("inches", "centimetres"), ("mph", "km/h"), ("seconds", "minutes"),
    ("tons", "kilograms"), ("dollars", "euros"), ("degrees", "percent"),
)
_UNIT = dict(_UNITS)
_UNIT_AFTER = re.compile(r"(?<=\d)(%| (?:" + "|".join(re.escape(u) for u, _ in _UNITS if u != "%") + r"))\b")
_TITLES = (
    ("chief executive officer", "CEO"), ("chief executive", "CEO"), ("chief financial officer", "CFO"),
    ("chief operating officer", "COO"), ("chief technology officer", "CTO"), ("vice president", "VP"),
    ("prime minister", "PM"), ("general manager", "GM"), ("member of parliament", "MP"),
    ("attorney general", "AG"), ("chief of staff", "CoS"), ("chief medical officer", "CMO"),
    ("executive director", "ED"), ("managing director", "MD"), ("secretary general", "SG"),
)
_TITLE = re.compile(r"\b(" + "|".join(re.escape(t) for t, _ in _TITLES) + r")\b", re.IGNORECASE)
_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen " \
        "sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_LEADS = ("According to the context, ", "The passages say that ", "Based on the documents, ")
_LOWER_OK = frozenset("the a an in on at it its this these there he she they his her their during after "
                      "before by for from when while as since some many most".split())


def words_of(n: int) -> str:
    """``n`` (0–9999) in words; hundreds as English says them (``forty-two hundred``)."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n % 100 == 0 and n < 10_000:
        return words_of(n // 100) + " hundred"
    if n < 1000:
        return _ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " and " + words_of(n % 100))
    return words_of(n // 1000) + " thousand" + ("" if n % 1000 == 0 else " " + words_of(n % 1000))


def sentences(text: str) -> list[str]:
    out = []
    for block in text.split("\n"):
        for s in SENTENCE_CUT.split(block.strip()):
            if 6 <= len(s.split()) <= 45 and s[-1:] in ".!?" and s[:1].isupper() and '"' not in s:
                out.append(s)
    return out


def _names(text: str) -> list[re.Match[str]]:
    """Runs of capitalised words, but for one opening a sentence (``Struggling Latics``)."""
    return [m for m in _NAME.finditer(text) if m.group(0).split()[0] not in _MONTHS
            and not (m.start() == 0 or text[:m.start()].rstrip()[-1:] in ".!?:\"'")
            and m.group(0).split()[0] not in {"The", "In", "On", "At", "A", "An", "This", "It", "He", "She"}]


def _put(s: str, start: int, end: int, new: str) -> tuple[str, int, int]:
    return s[:start] + new + s[end:], start, start + len(new)


def lead_in(s: str, rng: random.Random) -> tuple[str, str]:
    """A lead-in some answers open with, and the sentence as it reads after it."""
    first = s.split(" ", 1)[0]
    if rng.random() < 0.5 and first.lower() in _LOWER_OK:
        return rng.choice(_LEADS), s[0].lower() + s[1:]
    return "", s


# --- wrong answers ---------------------------------------------------------------------------

Made = tuple[str, int, int] | None  # answer, changed characters


def _swap_value(src: Source, s: str, rng: random.Random, pattern: re.Pattern[str], years: bool) -> Made:
    mine = [m for m in pattern.finditer(s) if years == bool(_YEAR.fullmatch(m.group(0)))]
    if not mine:
        return None
    hit = rng.choice(mine)
    others = {m.group(0) for t in src.sentences if t != s for m in pattern.finditer(t)
              if years == bool(_YEAR.fullmatch(m.group(0)))}
    others -= {m.group(0) for m in pattern.finditer(s)}
    if not years:  # a count: another count, not a year, a small ordinal or the same value
        value = hit.group(0).replace(",", "")
        others = {o for o in others if o.replace(",", "") != value and int(o.replace(",", "")) > 1}
    if not others:
        return None
    return _put(s, hit.start(), hit.end(), rng.choice(sorted(others)))


def year_swap(src: Source, s: str, rng: random.Random) -> Made:
    return _swap_value(src, s, rng, _YEAR, True)


def count_swap(src: Source, s: str, rng: random.Random) -> Made:
    return _swap_value(src, s, rng, _COUNT, False)


_TITLED = frozenset("mr mrs ms miss dr sir lord lady prof president king queen prince princess saint st".split())


def _other_names(src: Source, s: str, name: str, *, sharing: bool) -> list[str]:
    """Names of other sentences of the context, sharing a word with ``name`` or none. Two ways of
    writing one person ("Mr Scott" / "Walter Scott", "Van Gaal" / "Louis van Gaal") are no
    siblings: a name whose words hold the other's, or one with a title, is left out; and so is one
    written with its words clipped or misspelt (:func:`_one_name`)."""
    mine = {m.group(0) for m in _names(s)}
    words = set(name.lower().split())
    out = set()
    for t in src.sentences:
        for m in _names(t):
            other = m.group(0)
            theirs = set(other.lower().split())
            if other in mine or other in s or words <= theirs or theirs <= words or _one_name(name, other):
                continue
            if bool(words & theirs) != sharing:
                continue
            if sharing and (words | theirs) & _TITLED:
                continue
            out.add(other)
    return sorted(out)


def _one_name(a: str, b: str) -> bool:
    """Whether two names are one written two ways, word for word: a word clipped ("Man City" /
    "Manchester City", "Rafa Benitez" / "Rafael Benitez"), given a suffix ("New Zealander") or one
    letter off ("Humane Society" / "Human Society"). Found among the sibling cases drawn from the
    training folds' contexts: such a pair is the same thing, and an answer writing it either way
    is no mix-up."""
    x, y = a.lower().split(), b.lower().split()
    return len(x) == len(y) and x != y and all(
        u == v or u.startswith(v) or v.startswith(u) or _one_letter_off(u, v) for u, v in zip(x, y, strict=True))


def _one_letter_off(u: str, v: str) -> bool:
    """Whether one word is the other with one letter added."""
    short, long_ = sorted((u, v), key=len)
    return len(long_) == len(short) + 1 and any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def entity_move(src: Source, s: str, rng: random.Random) -> Made:
    """A name of another clause of the context in place of one of this sentence's (not its subject)."""
    mine = [m for m in _names(s) if m.start() > 0]
    rng.shuffle(mine)
    for hit in mine:
        if others := _other_names(src, s, hit.group(0), sharing=False):
            return _put(s, hit.start(), hit.end(), rng.choice(others))
    return None


def sibling_attribute(src: Source, s: str, rng: random.Random) -> Made:
    """What the context says of one entity given to its sibling, a name sharing a word with it
    (``Lake Michigan`` / ``Lake Superior``, ``Apollo 11`` / ``Apollo 12``)."""
    mine = _names(s)
    rng.shuffle(mine)
    for hit in mine:
        if others := _other_names(src, s, hit.group(0), sharing=True):
            return _put(s, hit.start(), hit.end(), rng.choice(others))
    return None


def negation_dropped(src: Source, s: str, rng: random.Random) -> Made:
    hits = list(_AUX_NOT.finditer(s))
    if not hits:
        return None
    hit = rng.choice(hits)
    aux = hit.group(1)
    if aux in {"does", "do", "did"}:
        return None  # "did not go" has no plain form without a verb table
    return _put(s, hit.start(), hit.end(), aux)


def negation_added(src: Source, s: str, rng: random.Random) -> Made:
    if _AUX_NOT.search(s) or re.search(r"\b(?:not|never|no)\b|n't", s):
        return None
    hits = [m for m in _AUX.finditer(s) if m.start() > 0]
    if not hits:
        return None
    hit = rng.choice(hits)
    return _put(s, hit.start(), hit.end(), hit.group(1) + " not")


def comparison_reversed(src: Source, s: str, rng: random.Random) -> Made:
    hits = list(_COMPARATIVE.finditer(s))
    if not hits:
        return None
    hit = rng.choice(hits)
    return _put(s, hit.start(), hit.end(), _OPPOSITE[hit.group(1)])


def unit_changed(src: Source, s: str, rng: random.Random) -> Made:
    hits = list(_UNIT_AFTER.finditer(s))
    if not hits:
        return None
    hit = rng.choice(hits)
    unit = hit.group(1).strip()
    new = _UNIT[unit]
    other = re.compile(r"\d[\d,.]*\s*" + re.escape(new.strip()) + r"\b")
    if any(other.search(t) for t in src.context):
        return None  # the context states that unit for some number
    lead = "" if new.startswith(" ") else " "
    return _put(s, hit.start(), hit.end(), lead + new if unit != "%" else new)


WrongMaker = Callable[[Source, str, random.Random], Made]
WRONG: dict[str, WrongMaker] = {
    "year of another event": year_swap,
    "count of another fact": count_swap,
    "name moved between clauses": entity_move,
    "attribute to a sibling": sibling_attribute,
    "negation dropped": negation_dropped,
    "negation added": negation_added,
    "comparison reversed": comparison_reversed,
    "unit changed": unit_changed,
}


# --- faithful rewordings ---------------------------------------------------------------------

def restated(src: Source, s: str, rng: random.Random) -> str | None:
    lead, body = lead_in(s, rng)
    return lead + body if lead else s


def rounded(src: Source, s: str, rng: random.Random) -> str | None:
    for m in _COUNT.finditer(s):
        value = int(m.group(0).replace(",", ""))
        if value >= 1000 and not _YEAR.fullmatch(m.group(0)):
            digits = len(str(value)) - 2
            near = round(value, -digits)
            if near != value:
                return _put(s, m.start(), m.end(), f"about {near:,}")[0]
    for m in re.finditer(r"(?<= )(\d+)\.(\d+)(?= [a-z])", s):
        return _put(s, m.start(), m.end(), f"about {round(float(m.group(0)))}")[0]
    return None


def spelled_out(src: Source, s: str, rng: random.Random) -> str | None:
    for m in _COUNT.finditer(s):
        value = int(m.group(0).replace(",", ""))
        if _YEAR.fullmatch(m.group(0)) or _DATE_MDY.search(s[max(0, m.start() - 12):m.end() + 6]):
            continue
        if 2 <= value < 100 or (1100 <= value < 10_000 and value % 100 == 0 and value % 1000 != 0):
            return _put(s, m.start(), m.end(), words_of(value))[0]
    return None


def date_reformatted(src: Source, s: str, rng: random.Random) -> str | None:
    if m := _DATE_MDY.search(s):
        month, day, year = m.groups()
        new = rng.choice([f"{day} {month} {year}", f"{year}-{_MONTHS.index(month) + 1:02d}-{int(day):02d}"])
        return _put(s, m.start(), m.end(), new)[0]
    if m := _DATE_DMY.search(s):
        day, month, year = m.groups()
        return _put(s, m.start(), m.end(), f"{month} {day}, {year}")[0]
    return None


_ACTIVE = re.compile(
    r"^(?P<subj>[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}) (?P<verb>[a-z]{3,}ed) "
    r"(?P<obj>(?:the|a|an|his|her|their|its) [a-z-]+(?: [a-z-]+)?|[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,3})"
    r"(?P<rest>(?: (?:in|on|at|for|during|after|before|with|to|from|as) [^;]+)?[.!?])$"
)


def passive_voice(src: Source, s: str, rng: random.Random) -> str | None:
    m = _ACTIVE.match(s)
    if not m or m.group("subj").split()[0] in {"The", "A", "An", "In", "On", "It", "This"}:
        return None
    obj = m.group("obj")
    return f"{obj[0].upper()}{obj[1:]} was {m.group('verb')} by {m.group('subj')}{m.group('rest')}"


def list_inlined(src: Source, s: str, rng: random.Random) -> str | None:
    i = src.sentences.index(s)
    chosen = src.sentences[i:i + 3]
    if len(chosen) < 3:
        return None
    return " ".join(f"{n}. {t}" for n, t in enumerate(chosen, 1))


FaithfulMaker = Callable[[Source, str, random.Random], str | None]
FAITHFUL: dict[str, FaithfulMaker] = {
    "restated": restated,
    "rounded": rounded,
    "numbers spelled out": spelled_out,
    "dates reformatted": date_reformatted,
    "passive voice": passive_voice,
    "list inlined": list_inlined,
}

_NEGATED_COPULA = re.compile(
    r"^(?P<subj>(?:The|This|These|Those|It|They|He|She|[A-Z][a-z]+)"
    r"(?: (?!(?:is|are|was|were|that|which|who|has|have|had|do|does|did)\b)[\w'-]+){0,3}?) "
    r"(?P<aux>is|are|was|were|can|does|do|did|has|have) not (?P<rest>[^,;]+)\.$"
)


def yes_no(src: Source, rng: random.Random) -> Iterator[Case]:
    """A "No, ..." answer to the yes/no question a negated context sentence answers."""
    for s in src.sentences:
        m = _NEGATED_COPULA.match(s)
        if m:
            subj = m.group("subj")
            subj = subj if subj.split()[0] not in {"The", "This", "That", "These", "Those", "It", "They"} \
                else subj[0].lower() + subj[1:]
            question = f"{m.group('aux').capitalize()} {subj} {m.group('rest')}?"
            answer = rng.choice([f"No, {s[0].lower()}{s[1:]}" if s.split()[0] in _LOWER_OK else f"No. {s}",
                                 f"No, {subj} {m.group('aux')} not {m.group('rest')}."])
            yield Case("a \"No, ...\" answer", False, src.context, question, answer)


def short_answers(rows: Iterable[tuple[int, dict[str, str]]], rng: random.Random) -> Iterator[tuple[Case, Case]]:
    """HaluEval QA items (``rows``: index, row): a one-name answer naming someone or something else
    the knowledge names (wrong), beside the right name (faithful)."""
    for _, row in rows:
        knowledge, question, right = row["knowledge"], row["question"], row["right_answer"].strip()
        if not _NAME.fullmatch(right) or right not in knowledge:
            continue
        others = [m.group(0) for m in _names(knowledge) if m.group(0) not in question
                  and not set(m.group(0).split()) & set(right.split())]
        if not others:
            continue
        other = rng.choice(sorted(set(others)))
        form = rng.choice(["{}.", "It was {}.", "The answer is {}."])
        wrong = form.format(other)
        start = form.index("{}")
        yield (Case("one-name answer", True, (knowledge,), question, wrong, start, start + len(other)),
               Case("one-name answer: the right name", False, (knowledge,), question, form.format(right)))


def titles(src: Source, rng: random.Random) -> Iterator[tuple[Case, Case]]:
    """A title the question abbreviates (``Who is the CFO?``) answered with another person the
    context names; beside it the person the context gives that title."""
    text = " ".join(src.context)
    for m in _TITLE.finditer(text):
        holder = _holder(text, m)
        if holder is None:
            continue
        window = text[max(0, m.start() - 60):m.end() + 60]
        others = [n.group(0) for n in _names(text) if not set(n.group(0).split()) & set(holder.split())
                  and n.group(0) not in window]
        if not others:
            continue
        abbr = dict((t.lower(), a) for t, a in _TITLES)[m.group(1).lower()]
        question = f"Who is the {abbr}?"
        other = rng.choice(sorted(set(others)))
        form = rng.choice(["{}.", "The {abbr} is {}.", "It is {}."])
        wrong = form.replace("{abbr}", abbr).format(other)
        start = wrong.index(other)
        yield (Case("title abbreviated", True, src.context, question, wrong, start, start + len(other)),
               Case("title abbreviated: the holder", False, src.context, question,
                    form.replace("{abbr}", abbr).format(holder)))
        return


def _holder(text: str, title: re.Match[str]) -> str | None:
    """The name the context gives ``title``: written right after it ("Prime Minister Tony Abbott",
    "chief executive Simon Stevens") or right before it between a comma and the title ("Beverley
    Sunderland, managing director of ..."); None unless exactly one name is, or it holds a word of
    the title (a name near a title is not its holder: the firm of "managing director of
    Crosslands Solicitors", the capitalised title itself)."""
    title_words = {w.lower() for w in title.group(0).split()}
    found = set()
    for n in _names(text[max(0, title.start() - 60):title.end() + 60]):
        start = max(0, title.start() - 60) + n.start()
        if start <= title.start() < start + len(n.group(0)):  # the run holds the title: its rest
            words = n.group(0)[title.end() - start:].split()
            if len(words) >= 2 and words[0][0].isupper() and text[title.end():title.end() + 1] == " ":
                found.add(" ".join(words))
        elif start == title.end() + 1 or re.fullmatch(r",\s+(?:the\s+|its\s+|a\s+|an\s+)?",
                                                      text[start + len(n.group(0)):title.start()]):
            found.add(n.group(0))
    holders = [h for h in found if not {w.lower() for w in h.split()} & title_words]
    return holders[0] if len(holders) == 1 else None
