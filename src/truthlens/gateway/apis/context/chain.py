"""Chains of calls checked against their documents: the context of an answer the gateway checked,
remembered by the answer's text, so a later call that carries that answer as context is checked
against the documents behind it instead.

LlamaIndex's ``refine`` and LangChain's ``refine`` and ``map_reduce`` send the model's earlier
answers back as context ("We have provided an existing answer: …", the reduce step's joined
summaries). Read as they come, the last call's context is the previous answer plus one chunk: a
claim invented in step one is "supported" at the end. Here each checked answer is remembered
with the passages it was checked against; when a later request's passages hold a remembered
answer (a passage, or a run of blank-line-separated passages, equal to it once whitespace is
collapsed), that answer is replaced by its passages, and so, step after step, the final answer is
checked against every chunk the chain saw. The request's context source then ends in ``chain``
(``template:llamaindex-refine,chain``).

The gateway's own warning is never read as context: every warning a checked route writes is
removed from passages (and from an answer before it is remembered), wherever it sits, so a
warned step-one answer fed back as the "existing answer" is the model's words alone. Nor is it
read as part of an answer: a model that copies it into its refined answer has it blanked out
(spaces, so span offsets still index the answer) before the check.

Answers are remembered per client: the key includes a digest of the request's credentials (its
``Authorization`` header, set per exchange in :data:`SCOPE`), so a chain's steps, which one
application sends with one key, find each other, and a request from another client never has
its context replaced by the documents behind someone else's answer.

The memory is a bounded per-process cache (:data:`MAX_ENTRIES` answers, :data:`MAX_CHARS`
characters of passages in all, :data:`TTL_S` seconds): it forgets, and a chain whose steps land
on different workers is read step by step as before (each worker remembers its own checks).
Nothing in it is ever sent anywhere.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

MAX_ENTRIES = 4096
MAX_CHARS = 32 * 1024 * 1024  # passages remembered, in all (about 64 MB of str at most)
TTL_S = 900.0  # a chain's steps follow each other within seconds; 15 minutes is generous
MIN_ANSWER_CHARS = 40  # a short answer ("Yes.") is too likely to be a passage of its own
_MAX_RUN = 12  # blank-line-separated passages one remembered answer may have been split into
_MAX_WARNINGS = 32
_SPACE = re.compile(r"\s+")
CHAIN_SOURCE = "chain"
# The client whose request is being read (a digest of its credentials; "" for none): set by the
# exchange before it reads a request (:func:`scope_of`), read by :meth:`ChainMemory.expand`.
SCOPE: ContextVar[str] = ContextVar("truthlens_chain_scope", default="")


def scope_of(headers: Mapping[str, str]) -> str:
    """The memory's scope of a request with these (lower-case) headers: its credentials' digest."""
    credentials = headers.get("authorization", "")
    if not credentials:
        return ""
    return hashlib.blake2b(credentials.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class _Entry:
    passages: tuple[str, ...]
    at: float
    chars: int


class ChainMemory:
    """Checked answers → the passages they were checked against (see the module docstring)."""

    def __init__(self, *, max_entries: int = MAX_ENTRIES, max_chars: int = MAX_CHARS, ttl_s: float = TTL_S) -> None:
        self.max_entries, self.max_chars, self.ttl_s = max_entries, max_chars, ttl_s
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._chars = 0
        self._warnings: OrderedDict[str, re.Pattern[str]] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every answer and warning (a process that starts over: tests, a config reload)."""
        with self._lock:
            self._entries.clear()
            self._warnings.clear()
            self._chars = 0

    def note_warning(self, text: str) -> None:
        """A warning a checked route writes (read as part of no context from now on)."""
        note = _collapse(text)
        if not note:
            return
        with self._lock:
            if note not in self._warnings:
                self._warnings[note] = re.compile(r"\s+".join(map(re.escape, note.split(" "))))
            self._warnings.move_to_end(note)
            while len(self._warnings) > _MAX_WARNINGS:
                self._warnings.popitem(last=False)

    def without_warnings(self, text: str) -> str:
        """``text`` less every warning the gateway writes; a text with none is returned as it is
        (one with some comes back with its whitespace runs read as one space)."""
        notes = [note for note in list(self._warnings) if note.split(" ", 1)[0] in text]
        if not notes:
            return text
        flat = _collapse(text)
        found = [note for note in notes if note in flat]
        for note in found:
            flat = flat.replace(note, " ")
        return _collapse(flat) if found else text

    def blank_warnings(self, answer: str) -> str:
        """``answer`` with every warning the gateway writes in it (a model that copied it from
        the existing answer it was asked to refine) turned into spaces: the detector does not
        read it, and every offset into the answer still holds."""
        for note, pattern in list(self._warnings.items()):
            if note.split(" ", 1)[0] in answer:
                answer = pattern.sub(lambda m: " " * len(m.group(0)), answer)
        return answer

    def remember(self, answers: Iterable[str], passages: Sequence[str], *, scope: str = "",
                 now: float | None = None) -> None:
        """Each checked answer (as the upstream wrote it, or as the client got it: the warning is
        removed either way) with the passages it was checked against, for the client ``scope``."""
        kept = tuple(p for p in passages if p.strip())
        chars = sum(len(p) for p in kept)
        if not kept or chars > self.max_chars // 8:
            return
        at = time.monotonic() if now is None else now
        with self._lock:
            for answer in answers:
                key = self._key(answer, scope)
                if key is None:
                    continue
                old = self._entries.pop(key, None)
                if old is not None:
                    self._chars -= old.chars
                self._entries[key] = _Entry(kept, at, chars)
                self._chars += chars
            while self._entries and (len(self._entries) > self.max_entries or self._chars > self.max_chars):
                self._chars -= self._entries.popitem(last=False)[1].chars

    def expand(self, passages: Sequence[str], *, now: float | None = None) -> tuple[tuple[str, ...], bool]:
        """``passages`` with the gateway's warnings removed and every remembered answer in them
        replaced by its passages; and whether any was (the request is a chain's later step)."""
        cleaned = [p for p in (self.without_warnings(p) for p in passages) if p.strip()]
        if not self._entries:
            return tuple(cleaned), False
        at = time.monotonic() if now is None else now
        scope = SCOPE.get()
        out: list[str] = []
        found = False
        i = 0
        while i < len(cleaned):
            for j in range(min(len(cleaned), i + _MAX_RUN), i, -1):  # the longest run first
                entry = self._lookup("\n\n".join(cleaned[i:j]), scope, at)
                if entry is not None:
                    out.extend(entry.passages)
                    found, i = True, j
                    break
            else:
                out.append(cleaned[i])
                i += 1
        return tuple(dict.fromkeys(out)), found

    def _lookup(self, text: str, scope: str, now: float) -> _Entry | None:
        key = self._key(text, scope)
        if key is None:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if now - entry.at > self.ttl_s:
                del self._entries[key]
                self._chars -= entry.chars
                return None
            self._entries.move_to_end(key)
            return entry

    def _key(self, answer: str, scope: str) -> bytes | None:
        text = _collapse(self.without_warnings(answer))
        if len(text) < MIN_ANSWER_CHARS:
            return None
        return hashlib.blake2b(f"{scope}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


MEMORY = ChainMemory()  # the process's memory (the processor's workers each have their own)
