"""Where adaptive routes keep their posteriors and the requests awaiting feedback: SQLite (one
file, the default; survives a restart; processes on one host share it) or Redis (replicas on
several hosts share it). Blocking calls: the gateway runs them off its event loop.

Records: per (key, arm) the posterior, picks and summed cost; per request id awaiting feedback
its key, arm, decision and the deadline after which silence counts as good; per settled request
id its outcome, kept for :data:`SETTLED_TTL_S` so a repeated or late feedback is told apart from
an unknown id. A request is settled exactly once: SQLite deletes it in a write transaction, Redis
by whoever removes it from the deadline index.

Every failure of the store itself raises :class:`StoreUnavailable`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from truthlens.gateway.policy.adaptive.bandit import ArmStats, keep_factor, updated

SETTLED_TTL_S = 7 * 24 * 3600
SWEEP_LIMIT = 200  # silent requests settled per sweep (the sweep runs on every pick)
Outcome = str  # good | bad | unknown | expired | repeated | wrong_route


class StoreUnavailable(Exception):
    """The store cannot be reached or used; the message says why."""


class BanditStore(Protocol):
    url: str

    def stats(self, key: str, arms: Sequence[str]) -> dict[str, ArmStats]: ...

    def record_pick(self, key: str, arms: Sequence[str], arm: str, request_id: str, decision: str,
                    deadline: float, memory: int | None) -> None:
        """Count ``arm``'s pick, await feedback for ``request_id``; with ``memory``, discount the
        evidence of every arm of ``key`` (see :mod:`~truthlens.gateway.policy.adaptive.bandit`)."""
        ...

    def add_cost(self, key: str, arm: str, cost: float) -> None: ...

    def settle_silent(self, now: float) -> int: ...

    def feedback(self, request_id: str, good: bool, decision: str | None, now: float) -> Outcome: ...

    def close(self) -> None: ...


def open_store(url: str) -> BanditStore:
    """``sqlite:PATH`` or ``redis://host:port/db``."""
    if url.startswith("sqlite:"):
        return SqliteStore(url)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(url)
    raise ValueError(f"unknown store {url!r} (expected sqlite:PATH or redis://host:port/db)")


# ---------------------------------------------------------------------------------- SQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS arms (key TEXT, arm TEXT, alpha REAL, beta REAL, picks INTEGER,
    cost_sum REAL, cost_n INTEGER, PRIMARY KEY (key, arm));
CREATE TABLE IF NOT EXISTS pending (request_id TEXT PRIMARY KEY, key TEXT, arm TEXT, decision TEXT,
    deadline REAL);
CREATE INDEX IF NOT EXISTS pending_deadline ON pending (deadline);
CREATE TABLE IF NOT EXISTS settled (request_id TEXT PRIMARY KEY, outcome TEXT, at REAL);
"""


class SqliteStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self.path = Path(url.removeprefix("sqlite:"))
        self._local = threading.local()  # one connection per thread (sqlite3 objects are not shared)
        try:
            self._db().executescript(_SCHEMA)  # its own transaction: executescript commits
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"sqlite {self.path}: {exc}") from None

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                # WAL with NORMAL sync: a crash of the process loses nothing, a power cut at most the
                # last few outcomes (a bandit's statistics, not a ledger); a write costs no fsync.
                db.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"sqlite {self.path}: {exc}") from None
            self._local.db = db
        return db

    def _tx(self) -> _Transaction:
        return _Transaction(self._db(), self.path)

    def stats(self, key: str, arms: Sequence[str]) -> dict[str, ArmStats]:
        with self._tx() as db:
            rows = db.execute("SELECT arm, alpha, beta, picks, cost_sum, cost_n FROM arms WHERE key = ?", (key,))
            found = {r[0]: ArmStats(r[1], r[2], r[3], r[4], r[5]) for r in rows}
        return {arm: found.get(arm, ArmStats()) for arm in arms}

    def record_pick(self, key: str, arms: Sequence[str], arm: str, request_id: str, decision: str,
                    deadline: float, memory: int | None) -> None:
        keep = keep_factor(memory)
        with self._tx() as db:
            _ensure(db, key, arm)
            if keep < 1.0:
                db.execute("UPDATE arms SET alpha = 1 + (alpha - 1) * ?, beta = 1 + (beta - 1) * ? WHERE key = ?",
                           (keep, keep, key))
            db.execute("UPDATE arms SET picks = picks + 1 WHERE key = ? AND arm = ?", (key, arm))
            db.execute("INSERT OR REPLACE INTO pending VALUES (?, ?, ?, ?, ?)",
                       (request_id, key, arm, decision, deadline))

    def add_cost(self, key: str, arm: str, cost: float) -> None:
        with self._tx() as db:
            _ensure(db, key, arm)
            db.execute("UPDATE arms SET cost_sum = cost_sum + ?, cost_n = cost_n + 1 WHERE key = ? AND arm = ?",
                       (cost, key, arm))

    def settle_silent(self, now: float) -> int:
        with self._tx() as db:
            rows = db.execute("SELECT request_id, key, arm FROM pending WHERE deadline <= ? LIMIT ?",
                              (now, SWEEP_LIMIT)).fetchall()
            for request_id, key, arm in rows:
                self._settle(db, request_id, key, arm, True, "silence", now)
            db.execute("DELETE FROM settled WHERE at < ?", (now - SETTLED_TTL_S,))
        return len(rows)

    def feedback(self, request_id: str, good: bool, decision: str | None, now: float) -> Outcome:
        with self._tx() as db:
            row = db.execute("SELECT key, arm, decision, deadline FROM pending WHERE request_id = ?",
                             (request_id,)).fetchone()
            if row is None:
                done = db.execute("SELECT outcome FROM settled WHERE request_id = ?", (request_id,)).fetchone()
                if done is None:
                    return "unknown"
                return "expired" if done[0] == "silence" else "repeated"
            key, arm, owner, deadline = row
            if decision is not None and decision != owner:
                return "wrong_route"
            if deadline <= now:  # late: the silence it was counted as stands
                self._settle(db, request_id, key, arm, True, "silence", now)
                return "expired"
            outcome = "good" if good else "bad"
            self._settle(db, request_id, key, arm, good, outcome, now)
            return outcome

    @staticmethod
    def _settle(db: sqlite3.Connection, request_id: str, key: str, arm: str, good: bool, outcome: str,
                now: float) -> None:
        _ensure(db, key, arm)
        alpha, beta = db.execute("SELECT alpha, beta FROM arms WHERE key = ? AND arm = ?", (key, arm)).fetchone()
        alpha, beta = updated(alpha, beta, good)
        db.execute("UPDATE arms SET alpha = ?, beta = ? WHERE key = ? AND arm = ?", (alpha, beta, key, arm))
        db.execute("DELETE FROM pending WHERE request_id = ?", (request_id,))
        db.execute("INSERT OR REPLACE INTO settled VALUES (?, ?, ?)", (request_id, outcome, now))

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


def _ensure(db: sqlite3.Connection, key: str, arm: str) -> None:
    db.execute("INSERT OR IGNORE INTO arms VALUES (?, ?, 1.0, 1.0, 0, 0.0, 0)", (key, arm))


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error); sqlite errors → StoreUnavailable."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db, self.path = db, path

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"sqlite {self.path}: {exc}") from None
        return self.db

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        try:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")
        except sqlite3.Error as error:
            raise StoreUnavailable(f"sqlite {self.path}: {error}") from None
        if isinstance(exc, sqlite3.Error):
            raise StoreUnavailable(f"sqlite {self.path}: {exc}") from None


# ---------------------------------------------------------------------------------- Redis

_PREFIX = "truthlens:bandit:"
# A pick's discount of every arm's evidence, atomically: KEYS the arms' hashes; ARGV[1] what is kept.
_DISCOUNT = """
local keep = tonumber(ARGV[1])
for _, key in ipairs(KEYS) do
  local a = tonumber(redis.call('HGET', key, 'alpha') or '1')
  local b = tonumber(redis.call('HGET', key, 'beta') or '1')
  redis.call('HSET', key, 'alpha', tostring(1 + (a - 1) * keep), 'beta', tostring(1 + (b - 1) * keep))
end
return 1
"""


class RedisStore:
    def __init__(self, url: str) -> None:
        import redis

        self.url = url
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        self._client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5,
                                            decode_responses=True)
        self._discount = self._client.register_script(_DISCOUNT)

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self._errors as exc:
            raise StoreUnavailable(f"redis {self.url}: {exc}") from None

    def stats(self, key: str, arms: Sequence[str]) -> dict[str, ArmStats]:
        def read() -> dict[str, ArmStats]:
            pipe = self._client.pipeline(transaction=False)
            for arm in arms:
                pipe.hgetall(_arm_key(key, arm))
            return {arm: _arm_stats(h) for arm, h in zip(arms, pipe.execute(), strict=True)}
        result: dict[str, ArmStats] = self._call(read)
        return result

    def record_pick(self, key: str, arms: Sequence[str], arm: str, request_id: str, decision: str,
                    deadline: float, memory: int | None) -> None:
        keep = keep_factor(memory)

        def write() -> None:
            if keep < 1.0:
                self._discount(keys=[_arm_key(key, a) for a in arms], args=[keep])
            pipe = self._client.pipeline(transaction=True)
            pipe.hsetnx(_arm_key(key, arm), "alpha", 1.0)  # Beta(1, 1): later increments start there
            pipe.hsetnx(_arm_key(key, arm), "beta", 1.0)
            pipe.hincrby(_arm_key(key, arm), "picks", 1)
            pipe.hset(_PREFIX + "pending:" + request_id, mapping={"key": key, "arm": arm, "decision": decision})
            pipe.expire(_PREFIX + "pending:" + request_id, SETTLED_TTL_S)
            pipe.zadd(_PREFIX + "deadlines", {request_id: deadline})
            pipe.execute()
        self._call(write)

    def add_cost(self, key: str, arm: str, cost: float) -> None:
        def write() -> None:
            pipe = self._client.pipeline(transaction=True)
            pipe.hincrbyfloat(_arm_key(key, arm), "cost_sum", cost)
            pipe.hincrby(_arm_key(key, arm), "cost_n", 1)
            pipe.execute()
        self._call(write)

    def settle_silent(self, now: float) -> int:
        def sweep() -> int:
            due = self._client.zrangebyscore(_PREFIX + "deadlines", "-inf", now, start=0, num=SWEEP_LIMIT)
            return sum(self._settle(str(rid), True, "silence") for rid in due)
        result: int = self._call(sweep)
        return result

    def feedback(self, request_id: str, good: bool, decision: str | None, now: float) -> Outcome:
        def answer() -> Outcome:
            pending = self._client.hgetall(_PREFIX + "pending:" + request_id)
            deadline = self._client.zscore(_PREFIX + "deadlines", request_id)
            if not pending or deadline is None:
                done = self._client.get(_PREFIX + "settled:" + request_id)
                if done is None:
                    return "unknown"
                return "expired" if done == "silence" else "repeated"
            if decision is not None and decision != pending.get("decision"):
                return "wrong_route"
            if deadline <= now:
                self._settle(request_id, True, "silence")
                return "expired"
            outcome = "good" if good else "bad"
            # Another process may have settled it between the read and here: then it was theirs.
            return outcome if self._settle(request_id, good, outcome) else "repeated"
        result: Outcome = self._call(answer)
        return result

    def _settle(self, request_id: str, good: bool, outcome: str) -> bool:
        """Settle one request, once: the process whose ZREM removes it owns the update."""
        if not self._client.zrem(_PREFIX + "deadlines", request_id):
            return False
        pending: dict[str, str] = self._client.hgetall(_PREFIX + "pending:" + request_id)  # type: ignore[assignment]
        if pending:
            # HINCRBYFLOAT is atomic: concurrent outcomes and discounts never lose an update.
            self._client.hincrbyfloat(_arm_key(pending["key"], pending["arm"]), "alpha" if good else "beta", 1.0)
        self._client.set(_PREFIX + "settled:" + request_id, outcome, ex=SETTLED_TTL_S)
        self._client.delete(_PREFIX + "pending:" + request_id)
        return True

    def close(self) -> None:
        self._client.close()


def _arm_key(key: str, arm: str) -> str:
    return f"{_PREFIX}arm:{key}|{arm}"


def _arm_stats(h: dict[str, str]) -> ArmStats:
    return ArmStats(float(h.get("alpha", 1.0)), float(h.get("beta", 1.0)), int(h.get("picks", 0)),
                    float(h.get("cost_sum", 0.0)), int(h.get("cost_n", 0)))


def now() -> float:
    """Wall-clock seconds: deadlines are compared across processes and restarts."""
    return time.time()
