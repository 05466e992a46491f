"""The config's top-level ``domains`` and ``keywords`` sections → the :class:`Vocabulary` the
decision rules compile against (which domain and keyword-set names a condition may use) and the
:class:`~truthlens.gateway.policy.domains.DomainSet` the gateway classifies requests with."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from truthlens.gateway.policy.decisions import Vocabulary
from truthlens.gateway.policy.domains import DomainSet, parse_domains
from truthlens.options import ConfigError, Section

KEYWORDS_SCHEMA = {
    "type": "object", "description": "a set name → its words or phrases ({type: keyword, name: …})",
    "additionalProperties": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": r"\S"}},
}


def parse_vocabulary(root: Section) -> tuple[Vocabulary, DomainSet]:
    """``domains`` (see :func:`~truthlens.gateway.policy.domains.parse_domains`) and ``keywords``:
    a set name → a list of words or phrases, for ``{type: keyword, name: …}`` conditions."""
    domain_set = parse_domains(root.section("domains"))
    raw: Any = root.get("keywords", {}, schema=KEYWORDS_SCHEMA)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError("keywords", "must be a mapping of a set name to a list of words or phrases")
    sets: dict[str, tuple[str, ...]] = {}
    for name, words in raw.items():
        key = f"keywords.{name}"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(key, "a keyword set's name must be a non-empty string")
        if not isinstance(words, list) or not words:
            raise ConfigError(key, "must be a non-empty list of words or phrases")
        for i, word in enumerate(words):
            if not isinstance(word, str) or not word.strip():
                raise ConfigError(f"{key}[{i}]", "must be a non-empty string")
        sets[name] = tuple(words)
    return Vocabulary(domains=frozenset(domain_set.names), keyword_sets=MappingProxyType(sets)), domain_set
