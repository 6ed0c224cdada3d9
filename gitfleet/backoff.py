"""Retry delays for faults: capped exponential backoff with jitter, one helper for the package.

Every remote operation (the hub's fetch and push, the agent's fetch and status push, Kubernetes
calls) retries through a `Backoff`. The delay doubles per consecutive failure up to `maximum`,
spread by `jitter` so a fleet of agents does not retry in step; a success resets it, and an
outside signal (a webhook, a filesystem event) may cut a wait short (`Retry.short_circuit`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Backoff:
    """Delay before retry `failures` (1 = after the first failure): base·2^(failures-1), capped
    at `maximum`, then spread by ±`jitter` (a share) and never above `maximum`."""

    base: float = 1.0
    maximum: float = 10.0
    jitter: float = 0.25

    def delay(self, failures: int, rng: random.Random | None = None) -> float:
        if failures <= 0:
            return 0.0
        top = min(self.maximum, self.base * 2.0 ** min(failures - 1, 62))
        spread = (rng or random).uniform(-self.jitter, self.jitter)
        return max(0.0, min(self.maximum, top * (1.0 + spread)))


@dataclass
class Retry:
    """The failure count of one kind of operation, and when it may next be tried."""

    backoff: Backoff = field(default_factory=Backoff)
    failures: int = 0
    not_before: float = 0.0  # a clock reading (the caller's clock)

    def failed(self, now: float, rng: random.Random | None = None) -> float:
        """Record a failure at `now`; returns the delay before the next try."""
        self.failures += 1
        delay = self.backoff.delay(self.failures, rng)
        self.not_before = now + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self.not_before = 0.0

    def short_circuit(self) -> None:
        """Something says the fault may be over (a webhook, an event): try at once, but keep
        the failure count so a still-failing remote is not hammered."""
        self.not_before = 0.0

    def ready(self, now: float) -> bool:
        return now >= self.not_before

    def wait(self, now: float) -> float:
        return max(0.0, self.not_before - now)
