"""Hot reload: :class:`ConfigStore` holds the current :class:`~truthlens.gateway.policy.config.Config`
and swaps one reference when the file changes and still validates (a bad edit keeps the old one).
Streams keep the snapshot they pinned at their first message.

A file rewritten in place passes through states nobody wrote on purpose: its first half can be
a valid config that routes less than the whole (a decision missing, a route unchecked). The
watcher therefore applies a change only once the file's stamp has stayed the same from one poll
to the next; an edit written as a new file renamed over the old one (what editors and
``kubectl``'s config map volumes do) is whole from the first poll that sees it."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from truthlens.gateway.policy.config import Config, load_config, parse_bytes
from truthlens.options import ConfigError

if TYPE_CHECKING:
    from truthlens.gateway.core.telemetry import Telemetry

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _FileStamp:
    mtime_ns: int
    size: int
    inode: int


def _stamp(path: Path) -> _FileStamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return _FileStamp(st.st_mtime_ns, st.st_size, st.st_ino)


class ConfigStore:
    """The current configuration and its reloads.

    ``current`` is read once per stream (its first message) and kept: a reload swaps the
    reference atomically and never changes a snapshot in use.
    """

    def __init__(self, path: str | os.PathLike[str], *, telemetry: Telemetry | None = None) -> None:
        self.path = Path(path)
        self._telemetry = telemetry
        self._stamp = _stamp(self.path)
        self._current = load_config(self.path)  # a bad file at start-up is fatal, not kept
        # What the detector was built from: a reload changes it only after a restart.
        self._running_detector = self._current.detector

    @property
    def current(self) -> Config:
        return self._current

    def reload(self) -> bool:
        """Re-read the file. True when a new configuration is now current; False when the file
        is unchanged or invalid (then the error is logged with its key, counted, and the old
        configuration stays)."""
        self._stamp = _stamp(self.path)
        try:
            data = self.path.read_bytes()
            if hashlib.sha256(data).hexdigest()[:12] == self._current.digest:
                return False
            new = parse_bytes(data, self.path)
        except (ConfigError, OSError) as exc:
            log.error("config reload rejected, keeping version %s: %s", self._current.digest, exc)
            self._count("rejected")
            return False
        if new.detector != self._running_detector:
            log.warning(
                "config %s changes the detector settings: they take effect after a restart", new.digest
            )
        elif self._current.detector != self._running_detector:
            log.info("config %s sets the detector back to the running settings: no restart needed", new.digest)
        old, self._current = self._current, new
        log.info("config reloaded: version %s → %s", old.digest, new.digest)
        self._count("applied")
        return True

    def changed_on_disk(self) -> bool:
        return _stamp(self.path) != self._stamp

    async def watch(self, interval_s: float = 2.0) -> None:
        """Poll the file (mtime, size, inode; then the content hash) until cancelled; a change
        is applied at the first poll that finds the file as the poll before found it."""
        seen = self._stamp
        while True:
            await asyncio.sleep(interval_s)
            stamp = _stamp(self.path)
            settled, seen = stamp == seen, stamp
            if settled and stamp != self._stamp:
                # Parsing may import a mode module: keep it off the event loop.
                await asyncio.to_thread(self.reload)

    def _count(self, result: str) -> None:
        if self._telemetry is not None:
            self._telemetry.record_config_reload(result)
