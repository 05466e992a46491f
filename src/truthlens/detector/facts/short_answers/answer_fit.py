"""Which of the context's names a question asks for: a small learned fit, for one-name answers.

The focus rules (:mod:`.focus`) read the role a question asks for and what the context calls each
name. They pass a wrong name whose kind the context never states ("United Kingdom." for "Who was
the oldest Prime Minister ...?") and one of the asked kind in another relation, because reading
a question that hops over two facts needs more than one rule per shape. This module scores every
name of the context as the answer to the question and gives each its share of a softmax over
them (names that hold one another, "Barack Obama" and "Barack Hussein Obama II", pooled as one):

- a name of the question's kind sits near the question's words in the context: the score is a
  dot product of two 12-number vectors, one summed over what the question asks (its "wh" word,
  its head, its focus words), one over the name (its first and last word, three-letter pieces,
  what the context calls it, its kind, quotes, the words beside it), so "which band" learns to
  prefer names the context calls a band or that end like band names, and "who" people;
- plus linear terms for how the name sits towards the question, each per "wh" word: the focus
  words in its sentence and in its clause, the question's words within eight words of it, the
  nearest focus word, how often it is mentioned, whether it is a sentence's subject or shares a
  sentence with the question's own names.

The weights (``answer_fit.npz``) were fitted by ``training/answer_fit.py`` on the one-name
answers of HaluEval QA's train fold (the right answer against the other names of its knowledge);
the recipe, its cross-validation and the thresholds below are in ``training/README.md`` ("The
short-answer fit"). The fact check reads a short answer's name by its share
(:func:`.focus.fit_reading`): under :data:`UNLIKELY_SHARE` it is a mix-up (another name of the
context answers the question far better); at :data:`ANSWERED_SHARE` or more the model's flag on
it is weakened (a rule's finding stands). Yes/no questions, choices and titles ("Who is the
CFO?") are left to the rules, which read them exactly.

What it cannot see: anything but capitalised names (a date, a number, "yes"), a context with one
name, a context far from the knowledge passages it was fitted on (over :data:`MAX_NAMES` names or
:data:`MAX_WORDS` words: left to the rules), and the relation itself: the fit reads which name
sits where the question points, not whether the context says it did what is asked. Its features
are the focus check's readings, so a change to those readings asks for a refit (the recipe prints
the fit's cross-validated ranking).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from truthlens.detector.facts.names import Name, find_names, lower_case_words
from truthlens.detector.facts.short_answers.answer_types import OWN, root, whole_names
from truthlens.detector.text import content_words, stem

WEIGHTS = Path(__file__).with_name("answer_fit.npz")
# Chosen on the train fold's cross-validation with the shipped detector (training/README.md, "The
# short-answer fit"): the most catches at which the right names flagged stay under the check's
# without the fit (the model's flags the fit weakens make room for the names it flags).
UNLIKELY_SHARE = 0.01
ANSWERED_SHARE = 0.3
_WH = re.compile(r"\b(who|whom|whose|where|when|what|which|how)\b", re.IGNORECASE)
_TOKEN = re.compile(r"[\w'’-]+")
_NEAR = 8  # words either side of a name that count as beside it
# The contexts it was fitted on: HaluEval's knowledge passages, at most 56 names and 252 words. On
# a context of many more names a softmax spreads thin (every name of a long article would fall
# under UNLIKELY_SHARE), and reading one costs in proportion to names times words: the fit
# leaves such contexts alone (an empty index), and the rules judge their short answers.
MAX_NAMES = 64
MAX_WORDS = 1_000
_GRAMS = 12  # three-letter pieces of a name's words kept, in order


@dataclass(frozen=True, slots=True)
class Candidate:
    """One name of the context (its lower-case words) and what the context shows of it alone."""

    words: frozenset[str]
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FitIndex:
    """What the fit reads of a context, built once per context (:func:`fit_index`)."""

    candidates: tuple[Candidate, ...]
    tokens: tuple[tuple[str, str], ...]  # every word of the context: lower case, stem


@dataclass(frozen=True, slots=True)
class Asked:
    """What the fit reads of a question (from the focus check's readings)."""

    wh: str
    head: frozenset[str]
    focus: frozenset[str]
    stems: frozenset[str]  # the question's content words but its names'
    names: tuple[frozenset[str], ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return ("wh:" + self.wh, *("head:" + h for h in sorted(self.head)[:2]),
                *("qw:" + w for w in sorted(self.focus)[:4]))


def asked(question: str, head: frozenset[str], focus: frozenset[str]) -> Asked:
    m = _WH.search(question)
    found = find_names(question, lower_case_words(question), skip_sentence_starts=True)
    names = tuple(frozenset(n.words) for n in found if n.words)
    own = {stem(w) for n in names for w in n}
    stems = frozenset(content_words(question)) - own
    return Asked(m.group(1).lower() if m else "none", head, focus | head, stems, names)


Called = Mapping[frozenset[str], frozenset[str]]  # what the context calls each name (:mod:`.answer_types`)
Sentences = Sequence[tuple[frozenset[str], tuple[frozenset[str], ...]]]  # each sentence's stems and names


def fit_index(context: Sequence[str], kinds: Mapping[frozenset[str], str], called: Called,
              quoted: frozenset[frozenset[str]], titled: frozenset[frozenset[str]]) -> FitIndex:
    """The context's names, each once (its first mention), with the keys of :func:`_name_keys`;
    empty for a context of more than :data:`MAX_WORDS` words or :data:`MAX_NAMES` names."""
    text = "\n".join(context)
    tokens = tuple((t.lower(), stem(t.lower())) for t in _TOKEN.findall(text))
    if len(tokens) > MAX_WORDS:
        return FitIndex((), ())
    lower = lower_case_words(text)
    seen: dict[frozenset[str], Candidate] = {}
    for passage in context:
        found = whole_names(passage, [n for n in find_names(passage, lower, skip_sentence_starts=False) if n.words])
        for n in found:
            words = frozenset(n.words)
            if words not in seen:
                seen[words] = Candidate(words, _name_keys(n, passage, words, kinds, called, quoted, titled))
    if len(seen) > MAX_NAMES:
        return FitIndex((), ())
    return FitIndex(tuple(seen.values()), tokens)


def _name_keys(n: Name, passage: str, words: frozenset[str], kinds: Mapping[frozenset[str], str], called: Called,
               quoted: frozenset[frozenset[str]], titled: frozenset[frozenset[str]]) -> tuple[str, ...]:
    first, last = n.words[0].lower(), n.words[-1].lower()
    text = passage[n.start:n.end]
    keys = ["last:" + last, "first:" + first, f"len:{min(len(n.words), 4)}", "suf:" + last[-3:]]
    keys += ["of"] * ("of" in text.split()) + ["digit"] * any(c.isdigit() for c in text)
    keys += ["kind:" + kind for k, kind in kinds.items() if words <= k]
    keys += ["called:" + c for c in sorted(_called(called, words))[:4]]
    keys += ["quoted"] * any(words <= q for q in quoted) + ["titled"] * any(words <= t for t in titled)
    before, after = passage[:n.start].split()[-1:], passage[n.end:].split()[:1]
    keys += ["prev:" + w.lower().strip(",.()\"'") for w in before]
    keys += ["next:" + w.lower().strip(",.\"'")[:6] for w in after]
    grams = sorted({w.lower()[i:i + 3] for w in n.words for i in range(max(1, len(w) - 2))})
    return tuple(keys + ["c3:" + g for g in grams[:_GRAMS]])


def _called(called: Called, words: frozenset[str]) -> frozenset[str]:
    return frozenset(root(w.removeprefix(OWN)) for key, said in called.items() if words <= key for w in said)


def _position_keys(words: frozenset[str], q: Asked, sentences: Sentences, overlap: tuple[int, int],
                   places: _Places, called: frozenset[str]) -> list[str]:
    """How the name sits towards the question (module note, second point)."""
    whole = max(len(q.focus), 1)
    mentions = [(said, names) for said, names in sentences if any(words & k for k in names)]
    best = max((len(q.stems & said) / max(len(q.stems), 1) for said, _ in mentions), default=0.0)
    beside_asked = any(k & n for _, names in mentions for k in names if not k & words for n in q.names)
    keys = [f"ov:{min(overlap[0], 4)}", f"ovc:{min(overlap[1], 4)}", f"ovall:{int(overlap[0] >= whole)}",
            f"ovcall:{int(overlap[1] >= whole)}", f"men:{min(len(mentions), 3)}",
            f"first_sentence:{int(bool(sentences) and any(words & k for k in sentences[0][1]))}",
            f"qov:{min(int(best * 10), 6)}", f"withq:{int(beside_asked)}",
            f"subj:{int(any(names and names[0] & words for _, names in mentions))}"]
    if any(words & n for n in q.names):
        keys.append("shareq")
    heads = {h[:5] for h in q.head}
    if heads and any(stem(w)[:5] in heads for w in words):
        keys.append("headlast")
    if heads and any(c[:5] in heads for c in called):
        keys.append("headcalled")
    keys.append(f"calledq:{min(sum(1 for c in called if c[:5] in {w[:5] for w in q.stems}), 3)}")
    return keys + _proximity(places, words)


@dataclass(frozen=True, slots=True)
class _Places:
    """Where the question's words stand in the context (read once per question)."""

    tokens: Sequence[tuple[str, str]]
    focus: list[int]  # the focus words' places
    said: list[int]  # the places of the question's other content words

    @classmethod
    def of(cls, tokens: Sequence[tuple[str, str]], q: Asked) -> _Places:
        return cls(tokens, [i for i, (_, s) in enumerate(tokens) if s in q.focus],
                   [i for i, (_, s) in enumerate(tokens) if s in q.stems])


def _proximity(places: _Places, words: frozenset[str]) -> list[str]:
    tokens = places.tokens
    at = [i for i, (w, _) in enumerate(tokens) if w in words]
    if not at:
        return ["dfoc:none"]
    focus = places.focus
    said = [i for i in places.said if tokens[i][0] not in words]  # (the name's own words are not the question's)
    near = max(len({tokens[j][1] for j in said if abs(j - a) <= _NEAR}) for a in at) if said else 0
    return ["dfoc:" + (_bucket(min(abs(a - b) for a in at for b in focus)) if focus else "none"),
            "dq:" + (_bucket(min(abs(a - b) for a in at for b in said)) if said else "none"), f"win:{min(near, 5)}"]


def _bucket(distance: int) -> str:
    return next(str(i) for i, top in enumerate((1, 3, 6, 12, 1 << 30)) if distance <= top)


Features = dict[frozenset[str], tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]


def features(q: Asked, index: FitIndex, sentences: Sentences, overlap: Mapping[frozenset[str], tuple[int, int]],
             called: Called) -> Features:
    """Per name of the context but the question's own: (question keys, name keys, position keys)."""
    own = {w for n in q.names for w in n}
    places = _Places.of(index.tokens, q)
    out: Features = {}
    for c in index.candidates:
        if c.words <= own:
            continue
        out[c.words] = (q.keys, c.keys, tuple(_position_keys(c.words, q, sentences, overlap[c.words], places,
                                                             _called(called, c.words))))
    return out


def same_name(a: frozenset[str], b: frozenset[str]) -> bool:
    """One name written two ways: one holds the other's words."""
    return a <= b or b <= a


def linear_keys(q: Sequence[str], n: Sequence[str], position: Sequence[str]) -> list[str]:
    """The keys of a name's linear weights: each name key, and each position key on its own and
    per "wh" word (``q[0]``)."""
    return [f"n|{k}" for k in n] + [f"r|{k}" for k in position] + [f"{q[0]}|{k}" for k in position]


class Fit:
    """The fitted weights: a vector per question key and name key, a weight per linear key."""

    def __init__(self, q: Mapping[str, np.ndarray], n: Mapping[str, np.ndarray], linear: Mapping[str, float]) -> None:
        self.q, self.n, self.linear = q, n, linear
        self.dim = len(next(iter(q.values()))) if q else 0

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> Fit:
        with np.load(path) as data:
            def table(name: str) -> dict[str, np.ndarray]:
                return dict(zip(data[name + "_keys"].tolist(), data[name + "_vectors"].astype(np.float32), strict=True))
            linear = dict(zip(data["linear_keys"].tolist(), data["linear_weights"].tolist(), strict=True))
            return cls(table("q"), table("n"), linear)

    def score(self, q: Sequence[str], n: Sequence[str], position: Sequence[str]) -> float:
        zero = np.zeros(self.dim, np.float32)
        qv = sum((self.q[k] for k in q if k in self.q), zero)
        nv = sum((self.n[k] for k in n if k in self.n), zero)
        return float(qv @ nv) + sum(self.linear.get(k, 0.0) for k in linear_keys(q, n, position))

    def shares(self, found: Features) -> dict[frozenset[str], float]:
        """Each name's softmax share of the context's names."""
        keys = list(found)
        scores = np.array([self.score(*found[k]) for k in keys])
        p = np.exp(scores - scores.max())
        return dict(zip(keys, (p / p.sum()).tolist(), strict=True))


@functools.cache
def shipped() -> Fit:
    return Fit.load()


def pooled(shares: Mapping[frozenset[str], float], words: frozenset[str]) -> float:
    """The share of ``words`` with every name written as the same one."""
    return sum(v for k, v in shares.items() if same_name(k, words))


def candidate_of(found: Features | Mapping[frozenset[str], object], words: frozenset[str]) -> frozenset[str] | None:
    """The context's name an answer's name ``words`` is: itself, the shortest holding it, or the longest it holds."""
    if words in found:
        return words
    holding = [k for k in found if words and words <= k]
    if holding:
        return min(holding, key=len)
    held = [k for k in found if k and k <= words]
    return max(held, key=len) if held else None
