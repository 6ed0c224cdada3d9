"""When the agent's next heartbeat is due: once per interval, jittered, never in lockstep.

Ten thousand agents started together (a Git server back, a fleet-wide agent upgrade) would
otherwise push their heartbeats in the same second of every interval. So the first heartbeat
after the start comes at a uniformly random point of the first interval (each agent's phase),
and every later one an interval later, drawn uniformly within +-jitter of it: the fleet's
pushes stay spread evenly over the interval, and an idle agent is never silent longer than
interval x (1 + jitter) (plus a step that overran), which the tolerance the hub judges by must
exceed (gitfleet.wire.heartbeat). A jitter of 0% asks for none of this: every interval exactly,
the first too. New timing (a new cluster.yaml) applies from the next
heartbeat on: the one already scheduled keeps the promise the last heartbeat declared.
"""

from __future__ import annotations

import random

from gitfleet.wire.heartbeat import HeartbeatTiming


class HeartbeatSchedule:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.next = 0.0       # due at the first step
        self.sent = 0         # heartbeats sent since the start

    def due(self, now: float) -> bool:
        return now >= self.next

    def sent_at(self, now: float, timing: HeartbeatTiming) -> None:
        """A heartbeat was taken at `now`: schedule the next one."""
        if self.sent == 0 and timing.jitter > 0:
            wait = self.rng.uniform(0.0, timing.interval)
        else:
            wait = timing.interval * (1 + self.rng.uniform(-timing.jitter, timing.jitter))
        self.sent += 1
        self.next = now + wait
