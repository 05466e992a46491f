"""Is a model's revision an answer? The shapes a re-ask comes back in that are not one.

A refine call asks a model to revise an answer. Small and base models often do something else:
they repeat the prompt's own rules, quote the original answer back, echo the question or a
passage, or emit a fragment of the data block's JSON (``"Question": ...``). Such a reply can
still score lower than the original — it states nothing unsupported — yet it answers nothing,
and shipping it as ``rewritten`` replaces a flagged answer with a non-answer. Others reply
with no claim at all: an acknowledgement ("OK", "Done."), a verdict word ("SUPPORTED") or a
JSON verdict object instead of the text asked for. A reply states nothing about the exchange
when none of its words of substance (four letters or more, or holding a digit) occurs in the
question, the context or the answer it revises: a revision restates or corrects what they
talk about, so it shares their names, numbers and terms (``no_claim``). A one-word "Yes." is
read so too: it goes out as the original answer with its warning, never as a clean rewrite.
:func:`why_not_an_answer` names the shape (a short label for attributes) or returns None.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from truthlens.detector.text import sentences

# Quote marks a model wraps a copied answer in.
_QUOTES = "\"'`“”‘’«»„"
_WORD = re.compile(r"\w+", re.UNICODE)
# A JSON key at the start of a line or after a brace: '"Question": ...', '{"answer": ...'.
_JSON_KEY = re.compile(r'(?:^|[{,\n])\s*"[^"\n]{1,40}"\s*:', re.MULTILINE)
# The names the refine prompt's data block uses: a reply that carries them copied the prompt.
_PROMPT_FIELDS = ("flagged_spans", "hallucination_confidence", "Flagged spans that may be hallucinated")
_MIN_ECHO_WORDS = 6  # a copied instruction or passage is at least this long to count as an echo
_SUBSTANCE_LETTERS = 4  # a word this long (or one holding a digit) can carry a claim: names, numbers, terms


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _sentences(text: str) -> list[str]:
    """The rules of a prompt block long enough to count as an echo: its sentences, each cut at a
    colon too ("Rules: keep it short" holds two)."""
    parts = (p for s, e in sentences(text) for p in re.split(r"(?<=:)\s+", text[s:e]))
    return [n for n in (_norm(p) for p in parts) if len(n.split()) >= _MIN_ECHO_WORDS]


def why_not_an_answer(revision: str, *, original: str, question: str, passages: Sequence[str],
                      instructions: Sequence[str]) -> str | None:
    """Why ``revision`` is not an answer to ``question`` (``empty``, ``json``, ``prompt_echo``,
    ``question_echo``, ``passage_echo``, ``quoted_original``, ``no_claim``), or None when it may
    be one. ``instructions``: the fixed texts of the prompt that asked for it."""
    text = revision.strip()
    norm = _norm(text)
    if not norm:
        return "empty"
    if _is_json(text):
        return "json"
    if any(field in text for field in _PROMPT_FIELDS) or any(
            rule in norm for block in instructions for rule in _sentences(block)):
        return "prompt_echo"
    if norm == _norm(question):
        return "question_echo"
    if _quotes_original(text, original):
        return "quoted_original"
    if any(norm == _norm(p) or (len(_norm(p).split()) >= 2 * _MIN_ECHO_WORDS and _norm(p) in norm)
           for p in passages):
        return "passage_echo"
    if not _substance(norm) & _substance(_norm(" ".join((question, original, *passages)))):
        return "no_claim"
    return None


def _substance(norm: str) -> set[str]:
    """The words of a normalised text that can carry a claim (see the module docstring)."""
    return {w for w in norm.split() if len(w) >= _SUBSTANCE_LETTERS or any(c.isdigit() for c in w)}


def _is_json(text: str) -> bool:
    """A JSON value, or a fragment of an object (``"Question": "..."``)."""
    if text[0] in "{[":
        try:
            return isinstance(json.loads(text), (dict, list))
        except ValueError:
            pass
    return bool(_JSON_KEY.search(text))


def _quotes_original(text: str, original: str) -> bool:
    """The original answer given back in quote marks (whole, or quoted inside a comment on it)."""
    inner = _norm(original)
    if not inner:
        return False
    stripped = text.strip(_QUOTES + " \n")
    if stripped != text and _norm(stripped) == inner:
        return True
    quoted = re.findall(r"[\"“«„]([^\"”»]+)[\"”»]", text)
    return any(_norm(q) == inner for q in quoted)
