"""How relevant each context piece is to each answer claim, for the ``grounded`` row planner.

Two scorers behind one small interface (a ``[claims, pieces]`` matrix, higher = more relevant):

- :class:`EmbeddingRelevance`: cosine between the shipped sentence embedder's vectors
  (all-MiniLM-L6-v2, ``src/truthlens/evidence/embedder.py``; the same graph and cache the evidence
  gate uses) plus a lexical boost. Embeddings gloss over exact facts ("opened in 1932" and
  "opened in 1987" are near neighbours of any founding-year sentence), while the passage that
  states a claim usually shares its rare words: names, numbers, the unusual noun. So the score
  is ``cosine + LEXICAL_WEIGHT · overlap``, where ``overlap`` is the IDF-weighted share of the
  claim's content words found in the piece (IDF over this check's pieces: a word every piece
  has ranks nothing).
- :class:`LexicalRelevance`: the overlap alone, used when the embedder cannot load or fails —
  worse at paraphrases, never silently "clean": every claim still gets a row of context.

A long context is embedder-bound on its first check (each piece is a model run; repeated
pieces come from the embedder's cache). Past ``SHORTLIST_FROM`` pieces only each claim's
``SHORTLIST_PER_CLAIM`` best pieces by word overlap are embedded; the rest keep their overlap
score with no cosine, so they rank below every embedded piece. Up to ``SHORTLIST_FROM`` pieces
(about 3k tokens of context) every piece is embedded, as before.
"""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Protocol

import numpy as np

from truthlens.detector.scoring.memo import Memo
from truthlens.detector.text import STOP_WORDS

log = logging.getLogger(__name__)

# Weight of the lexical overlap (in [0, 1]) beside the cosine (about [0, 0.9] for this encoder):
# a claim's exact words move a piece up about as much as a clearly closer paraphrase would.
LEXICAL_WEIGHT = 0.5
# Above this many pieces, embed only a shortlist: each claim's best pieces by word overlap.
# A row holds about four 96-token pieces, so eight candidates per claim leave it room to choose.
SHORTLIST_FROM = 32
SHORTLIST_PER_CLAIM = 8

# Word postings of the contexts seen last, charged by their terms and hits (tens of bytes each:
# about 20 MB at most, some forty 8k-token contexts).
POSTINGS: Memo[tuple[str, ...], Mapping[str, tuple[int, ...]]] = Memo(
    max_entries=256, max_size=200_000, size=lambda index: len(index) + sum(len(h) for h in index.values())
)

_WORD = re.compile(r"\d[\d,.]*\d|\d|[^\W\d_]+")
# The stop words (detector/text.py) and words that rank no passage above another: reporting verbs
# and the adverbs of place and time every news passage has.
_STOPWORDS = STOP_WORDS | frozenset(
    "above again against because below down few further like most new now off once out said say says through told "
    "too until up".split()
)


class SentenceEncoder(Protocol):
    """What :class:`EmbeddingRelevance` needs of an embedder (``OnnxEmbedder`` has it)."""

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray: ...


class Relevance(Protocol):
    name: str

    def scores(self, claims: Sequence[str], pieces: Sequence[str]) -> np.ndarray:
        """``[len(claims), len(pieces)]`` relevance, higher = more relevant."""
        ...


def content_terms(text: str) -> set[str]:
    """Lower-cased content words and numbers (``4,120`` → ``4120``), stop words left out."""
    terms = set()
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if word[0].isdigit():
            terms.add(word.replace(",", "").rstrip("."))
        elif len(word) > 2 and word not in _STOPWORDS:
            terms.add(word)
    return terms


def postings(pieces: tuple[str, ...]) -> Mapping[str, tuple[int, ...]]:
    """Each content term and the pieces that hold it; cached per context (a second answer on
    the same pieces reads them again)."""
    return POSTINGS.get(pieces, lambda: _postings(pieces))


def _postings(pieces: Sequence[str]) -> Mapping[str, tuple[int, ...]]:
    found: dict[str, list[int]] = defaultdict(list)
    for index, piece in enumerate(pieces):
        for term in content_terms(piece):
            found[term].append(index)
    return MappingProxyType({term: tuple(hits) for term, hits in found.items()})


def lexical_overlap(claims: Sequence[str], pieces: Sequence[str]) -> np.ndarray:
    """IDF-weighted share of each claim's content terms that each piece contains, in [0, 1]."""
    index = postings(tuple(pieces))
    n = len(pieces)
    out = np.zeros((len(claims), n), dtype=np.float32)
    for row, claim in enumerate(claims):
        total = 0.0
        for term in content_terms(claim):
            hits = index.get(term, ())
            # A term no piece has still counts in the total: a claim whose words are mostly
            # absent everywhere is weakly supported by any piece.
            idf = math.log((n + 1) / (len(hits) + 1)) + 1.0
            total += idf
            if hits:
                out[row, list(hits)] += idf
        if total > 0:
            out[row] /= total
    return out


class LexicalRelevance:
    """Content-word overlap only (the fallback when no embedder is available)."""

    name = "lexical"

    def scores(self, claims: Sequence[str], pieces: Sequence[str]) -> np.ndarray:
        return lexical_overlap(claims, pieces)


class EmbeddingRelevance:
    """Cosine of sentence embeddings plus the lexical boost; lexical alone if embedding fails."""

    name = "embedding"

    def __init__(self, encoder: SentenceEncoder) -> None:
        self._encoder = encoder

    @property
    def encoder(self) -> SentenceEncoder:
        """The sentence embedder (the verdict's support score reuses it and its cache)."""
        return self._encoder

    def scores(self, claims: Sequence[str], pieces: Sequence[str]) -> np.ndarray:
        lexical = lexical_overlap(claims, pieces)
        chosen = shortlist(lexical)
        try:
            # One call: the embedder caches each text, so a context sent again costs nothing.
            vectors = np.asarray(
                self._encoder.embed_sync([*claims, *(pieces[i] for i in chosen)]), dtype=np.float32
            )
        except Exception:  # a broken embedder must not turn the check into "unavailable"
            log.warning("detector: the embedder failed; ranking context by word overlap only", exc_info=True)
            return lexical
        # A piece left out of the shortlist scores below every embedded one (cosine -1).
        cosine = np.full(lexical.shape, -1.0, dtype=np.float32)
        cosine[:, chosen] = vectors[: len(claims)] @ vectors[len(claims) :].T
        return np.asarray(cosine + LEXICAL_WEIGHT * lexical, dtype=np.float32)


def shortlist(lexical: np.ndarray) -> list[int]:
    """The pieces to embed, in order: all of them up to ``SHORTLIST_FROM``, else the union of
    each claim's ``SHORTLIST_PER_CLAIM`` best by word overlap (``lexical``: ``[claims, pieces]``)."""
    n = lexical.shape[1]
    if n <= SHORTLIST_FROM:
        return list(range(n))
    best = np.argsort(-lexical, axis=1, kind="stable")[:, :SHORTLIST_PER_CLAIM]
    return sorted({int(i) for i in best.ravel()})


def load_relevance(intra_op_threads: int = 0, parallel_runs: int = 1) -> Relevance:
    """The shipped embedder's relevance, or (with a warning) the lexical fallback."""
    try:
        from truthlens.evidence.embedder import OnnxEmbedder

        return EmbeddingRelevance(
            OnnxEmbedder.load(intra_op_threads=intra_op_threads, parallel_runs=parallel_runs)
        )
    except Exception as exc:  # missing files, onnxruntime errors, import errors
        log.warning(
            "detector: the sentence embedder could not load (%s); chunk_aggregation 'grounded' ranks "
            "context by word overlap instead",
            exc,
        )
        return LexicalRelevance()
