"""Time as an injected dependency, so heartbeats, failover and cron run in virtual time in tests."""

from __future__ import annotations

import threading
import time
from typing import Protocol

from gitfleet.timestamps import isoformat, parse_iso

__all__ = ["isoformat", "parse_iso"]   # (kept here too: every clock user formats times)


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` (a virtual clock advances instead)."""


class SystemClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that moves only when told to (or when slept on)."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += max(0.0, seconds)

