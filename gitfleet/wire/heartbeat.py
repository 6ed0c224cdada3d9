"""The heartbeat timing a fleet gives its agents: the `agent:` mapping of `cluster.yaml`.

The hub writes it (from `fleet.yaml: heartbeat`, gitfleet.model.heartbeats) and every agent
reads it, so both sides share this one definition of its fields:

    agent:
      heartbeatInterval: 5m      # between two heartbeats of an idle agent
      heartbeatJitter: 10%       # each interval is drawn uniformly within +-10% of it
      heartbeatTolerance: 11m    # silence after which the hub judges the cluster Unknown

The agent declares the tolerance in each heartbeat (`toleranceSeconds`), so whoever reads a
status file judges it as the hub does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.durations import format_duration, parse_duration

AGENT_KEY = "agent"
FIELDS = ("heartbeatInterval", "heartbeatJitter", "heartbeatTolerance")
MAX_JITTER = 0.5   # beyond +-50% an "interval" no longer says when the next heartbeat comes
MARGIN = 30.0      # seconds, at least, between the longest silence and the tolerance
_PERCENT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")


def parse_percent(text: object) -> float:
    """`10%` -> 0.1 (ValueError unless a percentage from 0% to 50%)."""
    match = _PERCENT.match(str(text)) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a percentage: {text!r} (use e.g. 10%)")
    fraction = float(match.group(1)) / 100
    if fraction > MAX_JITTER:
        raise ValueError(f"{text} is more than {MAX_JITTER:.0%}")
    return fraction


def format_percent(fraction: float) -> str:
    return f"{round(fraction * 100, 2):g}%"


@dataclass(frozen=True)
class HeartbeatTiming:
    """When an agent sends heartbeats, and how long the hub waits before it judges it lost."""

    interval: float            # seconds
    jitter: float = 0.1        # a fraction of the interval, at most MAX_JITTER
    tolerance: float = 180.0   # seconds; at least `least_tolerance`

    @property
    def longest_gap(self) -> float:
        """The longest time a live, idle agent leaves between two heartbeats."""
        return self.interval * (1 + self.jitter)

    @property
    def least_tolerance(self) -> float:
        """The shortest tolerance that judges a live agent right: its longest silence, and a
        margin for the push and the hub's next read of it (30 s, or a tenth of the interval)."""
        return self.longest_gap + max(MARGIN, 0.1 * self.interval)

    def to_cluster(self) -> dict[str, str]:
        return {"heartbeatInterval": format_duration(self.interval),
                "heartbeatJitter": format_percent(self.jitter),
                "heartbeatTolerance": format_duration(self.tolerance)}

    @classmethod
    def from_cluster(cls, data: Any) -> HeartbeatTiming:
        """Read `cluster.yaml`'s `agent:` mapping (ValueError naming the field that is wrong,
        or unknown: nothing in it is ignored in silence)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{AGENT_KEY}: must be a mapping, not {data!r}")
        unknown = sorted(str(k) for k in data if k not in FIELDS)
        if unknown:
            raise ValueError(f"{AGENT_KEY}: unknown field(s) {', '.join(unknown)} "
                             f"(known: {', '.join(FIELDS)})")
        missing = [f for f in FIELDS if f not in data]
        if missing:
            raise ValueError(f"{AGENT_KEY}: missing {', '.join(missing)}")
        try:
            timing = cls(interval=parse_duration(data["heartbeatInterval"]),
                         jitter=parse_percent(data["heartbeatJitter"]),
                         tolerance=parse_duration(data["heartbeatTolerance"]))
        except ValueError as exc:
            raise ValueError(f"{AGENT_KEY}: {exc}") from None
        if timing.interval <= 0:
            raise ValueError(f"{AGENT_KEY}: heartbeatInterval must be more than 0")
        if timing.tolerance < timing.least_tolerance:
            raise ValueError(f"{AGENT_KEY}: heartbeatTolerance {data['heartbeatTolerance']} is "
                             "shorter than the interval, its jitter and a margin")
        return timing
