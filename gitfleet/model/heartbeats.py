"""`fleet.yaml: heartbeat`: how often agents report, and when the hub calls a silent one lost.

Every heartbeat is a push to a status repository, so the interval sets the Git load of an idle
fleet: pushes/s per status repository ~= N / (K x interval), for N clusters over K status
repositories (`status.repositories`). Left out (or `auto`), the interval grows with the fleet:
the first step of a ladder of round durations that keeps the busiest status repository's
clusters / interval at or below TARGET_RATE, and never under a minute. The ladder's steps are
coarse on purpose: a new interval is a new `cluster.yaml` for every cluster, so it changes only
when the fleet grows by a good share. See docs/heartbeats.md.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from gitfleet.model.statusshards import StatusShards
from gitfleet.wire.heartbeat import HeartbeatTiming

DEFAULT_JITTER = 0.1
TARGET_RATE = 5.0          # heartbeat pushes per second per status repository (half the budget)
MIN_INTERVAL = 60.0        # the agent's interval before fleet settings existed
TOLERANCE_SLACK = 60.0     # default tolerance: two intervals and this
# The longest silence the hub waits before it judges a cluster lost (and fails its workloads
# over): beyond a week a stopped cluster would in practice never be judged lost.
MAX_TOLERANCE = 7 * 86400.0
LADDER = tuple(60.0 * m for m in (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60))


def automatic_interval(clusters: int, repositories: int = 1) -> float:
    """The interval `auto` gives N clusters over K status repositories."""
    needed = max(clusters, 0) / (max(repositories, 1) * TARGET_RATE)
    for step in LADDER:
        if step >= needed:
            return step
    return 3600.0 * math.ceil(needed / 3600.0)


def busiest(labels: Mapping[str, Mapping[str, str]], shards: StatusShards) -> int:
    """The most clusters (name -> labels) one status repository holds: the fleet repo holds
    them all without `status.repositories`, and those no repository takes with them."""
    if not shards:
        return len(labels)
    held = Counter(getattr(shards.repository_of(name, cluster_labels), "name", None)
                   for name, cluster_labels in labels.items())
    return max(held.values(), default=0)


def default_tolerance(interval: float) -> float:
    """Two intervals and a minute: 3m for the old 60 s interval (today's rule of three)."""
    return 2 * interval + TOLERANCE_SLACK


@dataclass(frozen=True)
class HeartbeatSettings:
    interval: float | None = None     # seconds; None: automatic (from the fleet's size)
    jitter: float = DEFAULT_JITTER    # fraction of the interval
    tolerance: float | None = None    # seconds; None: default_tolerance(interval)

    def timing(self, clusters: int) -> HeartbeatTiming:
        """What the agents get in their cluster.yaml, in a fleet whose busiest status
        repository holds `clusters` (see `busiest`)."""
        interval = self.interval if self.interval is not None else \
            automatic_interval(clusters)
        tolerance = self.tolerance if self.tolerance is not None else \
            default_tolerance(interval)
        return HeartbeatTiming(interval=interval, jitter=self.jitter, tolerance=tolerance)

    def too_long(self) -> tuple[str, str] | None:
        """(field, why) when an explicit tolerance, or the least tolerance an explicit
        interval needs, is over MAX_TOLERANCE; None when neither is."""
        if self.tolerance is not None and self.tolerance > MAX_TOLERANCE:
            return ("tolerance", f"heartbeat.tolerance {self.tolerance:g}s is longer than "
                    f"{MAX_TOLERANCE:g}s (7 days): a stopped cluster would not be judged lost, "
                    "nor its workloads failed over, for that long; give at most 168h")
        if self.interval is not None:
            least = HeartbeatTiming(interval=self.interval, jitter=self.jitter,
                                    tolerance=0.0).least_tolerance
            if least > MAX_TOLERANCE:
                return ("interval", f"heartbeat interval {self.interval:g}s is too long: its "
                        f"tolerance would have to be at least {least:g}s, over {MAX_TOLERANCE:g}s "
                        "(7 days, the longest a stopped cluster may go unjudged)")
        return None

    def problem(self, clusters: int) -> str:
        """Why these settings cannot be judged right (a tolerance a live agent can outlast),
        or ""; `clusters` as for `timing`."""
        timing = self.timing(clusters)
        if timing.tolerance >= timing.least_tolerance:
            return ""
        how = "" if self.interval is not None else \
            f" (the automatic interval for {clusters} clusters in one status repository)"
        return (f"heartbeat.tolerance {timing.tolerance:g}s is too short for the interval "
                f"{timing.interval:g}s{how} and its jitter {timing.jitter:.0%}: a live agent "
                f"may stay silent {timing.longest_gap:g}s, and its heartbeat needs time to "
                f"reach the hub; give at least {timing.least_tolerance:g}s or lower the "
                "interval")
