"""Fault knobs for tests: added latency and an error rate for chosen verbs.

"Down" (connection refused) is not here: it closes the listening socket, see `KubeSim.down`.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field


@dataclass
class Faults:
    latency: float = 0.0
    error_verbs: frozenset[str] = frozenset()
    error_rate: float = 0.0
    error_status: int = 500
    _rng: random.Random = field(default_factory=random.Random)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self._lock:
            self.latency = 0.0
            self.error_verbs = frozenset()
            self.error_rate = 0.0
            self.error_status = 500

    def should_fail(self, verb: str) -> int:
        """The status code to fail this request with, or 0 to serve it."""
        with self._lock:
            if verb not in self.error_verbs or self.error_rate <= 0:
                return 0
            if self.error_rate >= 1 or self._rng.random() < self.error_rate:
                return self.error_status
            return 0
