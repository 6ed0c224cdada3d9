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

A restarted agent (a fleet-wide upgrade restarts every agent within minutes) does not push a
heartbeat at its start when the one its last run pushed still covers it: it carries that
heartbeat on (`resume`) and beats when the old schedule had its next beat due, or, when that
is already past, at a random point of what is left before the hub would judge the silence
(the declared tolerance less the delivery margin). Nothing else waits: a status change, or a
readiness the carried heartbeat does not say, is pushed in the step that sees it.
"""

from __future__ import annotations

import random

from gitfleet.lifecycle.judgement import tolerance
from gitfleet.timestamps import parse_iso
from gitfleet.wire.heartbeat import MARGIN, HeartbeatTiming
from gitfleet.wire.status import Heartbeat


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

    def resume(self, now: float, previous: Heartbeat | None,
               timing: HeartbeatTiming) -> Heartbeat | None:
        """At the start, with the heartbeat the last run pushed (None: none): the heartbeat to
        carry on, with the first beat scheduled within the time it still covers; None when a
        heartbeat is to be taken at once (none before, too old, unreadable, or no jitter)."""
        if previous is None or self.sent or timing.jitter <= 0 or not previous.time:
            return None
        try:
            last = parse_iso(previous.time)
        except ValueError:
            return None
        interval = min(timing.interval, float(previous.interval_seconds or timing.interval))
        latest = last + tolerance(previous) - max(MARGIN, 0.1 * interval)
        due = last + interval
        if due > now:
            self.next = min(due, now + interval)   # where the old schedule had it
        elif latest > now:
            self.next = now + self.rng.uniform(0.0, min(interval, latest - now))
        else:
            return None
        self.sent = 1                              # later beats: every interval +- jitter
        return previous
