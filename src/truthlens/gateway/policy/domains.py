"""Which domain a request's text belongs to (``{type: domain, name: …}`` conditions).

A domain is a set of example requests. The classifier embeds the user's text with the sentence
embedder the package ships (all-MiniLM-L6-v2, no download) and compares it with every example:
a domain's score is the mean cosine of its ``TOP_K`` nearest examples. The nearest domain wins
when its score reaches ``min_similarity`` and it beats the *background* set (everyday and
technical requests that belong to no domain); otherwise the request has no domain (``none``).
The confidence is the winner's share of a softmax over the scores (temperature ``TEMPERATURE``),
the background included, so it drops when another domain or no domain is nearly as close.

The package ships ``healthcare``, ``finance``, ``legal``, ``support`` and ``creative`` (one text
file of examples each, beside this module); a config's ``domains.sets`` adds a domain or extends
or replaces a shipped one. The example sets were written for this module and never taken from
the sets it is measured on (``bench/domains.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from truthlens.options import ConfigError, Section

DOMAIN_HEADER = "x-truthlens-domain"
EXAMPLES_DIR = Path(__file__).with_name("domain_examples")
SHIPPED = ("healthcare", "finance", "legal", "support", "creative")
BACKGROUND = "general"  # the file of requests that belong to no domain; not a domain name
TOP_K = 3
TEMPERATURE = 0.05
DEFAULT_MIN_SIMILARITY = 0.2  # chosen on the dev part of bench/domains.py (MMLU even rows, Banking77 train)
NAME_PATTERN = "^[a-z][a-z0-9_-]{0,39}$"
MAX_EXAMPLES = 500  # per domain: the matrix is compared with every request


@dataclass(frozen=True, slots=True)
class DomainMatch:
    """The classifier's answer: the domain (None: no domain is close enough) and its confidence."""

    name: str | None
    confidence: float

    def header(self) -> str:
        """The ``x-truthlens-domain`` value: ``healthcare;0.83`` or ``none``."""
        return "none" if self.name is None else f"{self.name};{self.confidence:.2f}"


class Embedder(Protocol):
    async def embed(self, texts: list[str]) -> Any: ...  # numpy array (len(texts), dim), L2-normalised rows


@dataclass(frozen=True, eq=False)
class DomainSet:
    """The configured domains and their examples. Identity equality: the embedded examples are
    cached on the instance, one matrix per embedder."""

    examples: Mapping[str, tuple[str, ...]]
    background: tuple[str, ...]
    min_similarity: float = DEFAULT_MIN_SIMILARITY
    _matrices: dict[int, tuple[Any, tuple[str, ...]]] = field(default_factory=dict, repr=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.examples)

    async def classify(self, text: str, embedder: Embedder) -> DomainMatch:
        """The domain of ``text`` (empty text: none)."""
        if not text.strip():
            return DomainMatch(None, 0.0)
        matrix, labels = await self._matrix(embedder)
        vector = (await embedder.embed([text]))[0]
        return decide(matrix @ vector, labels, self.min_similarity)

    async def _matrix(self, embedder: Embedder) -> tuple[Any, tuple[str, ...]]:
        cached = self._matrices.get(id(embedder))
        if cached is None:
            labels = tuple(name for name, texts in self.examples.items() for _ in texts)
            labels += (BACKGROUND,) * len(self.background)
            texts = [t for ts in self.examples.values() for t in ts] + list(self.background)
            cached = self._matrices[id(embedder)] = (await embedder.embed(texts), labels)
        return cached


def decide(similarities: Any, labels: tuple[str, ...], min_similarity: float) -> DomainMatch:
    """The domain whose ``TOP_K`` nearest examples are closest on average (see the module doc)."""
    by_label: dict[str, list[float]] = {}
    for label, sim in zip(labels, similarities.tolist(), strict=True):
        by_label.setdefault(label, []).append(sim)
    scores = {label: sum(top := sorted(sims, reverse=True)[:TOP_K]) / len(top) for label, sims in by_label.items()}
    best = max(scores, key=lambda label: scores[label])
    peak = scores[best]
    share = 1.0 / sum(math.exp((s - peak) / TEMPERATURE) for s in scores.values())
    if best == BACKGROUND or peak < min_similarity:
        return DomainMatch(None, share if best == BACKGROUND else 0.0)
    return DomainMatch(best, share)


def read_examples(path: Path) -> tuple[str, ...]:
    """One example per line; blank lines and ``#`` comments skipped."""
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return tuple(line for line in lines if line and not line.startswith("#"))


def shipped() -> dict[str, tuple[str, ...]]:
    return {name: read_examples(EXAMPLES_DIR / f"{name}.txt") for name in SHIPPED}


def parse_domains(s: Section) -> DomainSet:
    """The config's ``domains`` section: ``min_similarity`` and ``sets`` (a domain name →
    ``examples`` and ``replace``: a shipped domain's examples are extended unless ``replace``)."""
    s.allow("min_similarity", "sets")
    examples = shipped()
    sets = s.section("sets")
    for name in sets.raw:
        if not isinstance(name, str) or not _valid_name(name):
            raise ConfigError(sets.key(str(name)), "a domain name is lower-case letters, digits, '_' or '-' "
                                                   f"(at most 40, starting with a letter), not {BACKGROUND!r}")
        one = sets.entry(name)
        one.allow("examples", "replace")
        one.require("examples")
        own = tuple(one.string_list("examples"))
        if not own:
            raise ConfigError(one.key("examples"), "needs at least one example request")
        replace = one.boolean("replace", False)
        if replace and name not in examples:
            raise ConfigError(one.key("replace"), f"{name!r} is not a shipped domain ({', '.join(SHIPPED)}): "
                                                  "there is nothing to replace")
        merged = own if replace else examples.get(name, ()) + own
        if len(merged) > MAX_EXAMPLES:
            raise ConfigError(one.key("examples"), f"at most {MAX_EXAMPLES} examples per domain")
        examples[name] = merged
    return DomainSet(
        examples=examples,
        background=read_examples(EXAMPLES_DIR / f"{BACKGROUND}.txt"),
        min_similarity=s.number("min_similarity", DEFAULT_MIN_SIMILARITY, lo=-1.0, hi=1.0),
    )


def _valid_name(name: str) -> bool:
    return name != BACKGROUND and re.fullmatch(NAME_PATTERN, name) is not None
