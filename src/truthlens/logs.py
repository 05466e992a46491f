"""Process logging: ``--log-format text`` (the default: one human line per record) or ``json``
(one JSON object per line, for log pipelines). Worker processes read the choice from
``TRUTHLENS_LOG_FORMAT``, which the CLI sets before they start."""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, Literal

LogFormat = Literal["text", "json"]
FORMAT_ENV = "TRUTHLENS_LOG_FORMAT"
# The attribute a record carries its structured fields in (``log.info(..., extra={FIELDS: {...}})``).
FIELDS = "truthlens"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        line = json.dumps(out, ensure_ascii=False, default=str)
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            # A value holding bytes that are not UTF-8 (a client's header, kept byte for byte as
            # lone surrogates) has no UTF-8 form: the line escapes its non-ASCII instead, still
            # one JSON object whose strings decode to the same values.
            line = json.dumps(out, ensure_ascii=True, default=str)
        return line


def configure(level: str = "INFO", fmt: str | None = None, *, prefix: str = "") -> None:
    """Configure the root logger once per process (``fmt`` None: ``TRUTHLENS_LOG_FORMAT``, else text)."""
    chosen = fmt or os.environ.get(FORMAT_ENV, "text")
    handler = logging.StreamHandler()
    if chosen == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(f"%(asctime)s {prefix}%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
