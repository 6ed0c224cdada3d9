"""Structured logging: one `key=value` line per event, or one JSON object per line.

Quiet by default (warnings) for one-shot commands; daemons (hub, agent) log at info by default,
one line per render or sync, so that a cluster's logs say what it did.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = getattr(record, "fields", {}) or {}
        parts = [self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), record.levelname.lower(),
                 record.name, f"msg={_quote(record.getMessage())}"]
        parts += [f"{k}={_quote(v)}" for k, v in fields.items()]
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (RFC 3339, UTC), level, logger, msg, then the fields."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(), "logger": record.name,
            "msg": record.getMessage(),
        }
        fields: dict[str, Any] = getattr(record, "fields", {}) or {}
        for key, value in fields.items():
            data.setdefault(key, value)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str, separators=(",", ":"))


def _quote(value: object) -> str:
    text = str(value)
    if not text or any(c in text for c in ' "=\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


def setup_logging(verbosity: int = 0, *, fmt: str = "text", default_info: bool = False) -> None:
    """Log to stderr: warnings by default (info with `default_info`), -v info, -vv debug."""
    level = (logging.DEBUG if verbosity >= 2 else
             logging.INFO if verbosity == 1 or default_info else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    root = logging.getLogger("gitfleet")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def log(logger: logging.Logger, level: int, msg: str, **fields: Any) -> None:
    """Log `msg` with structured fields: log(LOG, logging.INFO, "rendered", clusters=3)."""
    logger.log(level, msg, extra={"fields": fields})
