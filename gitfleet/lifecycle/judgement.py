"""Heartbeat judgement: is a cluster Ready, NotReady, Unknown or NeverReported?

SEMANTICS, "Registration and heartbeats": `Unknown` when now > last heartbeat + its tolerance
(`NeverReported` if none ever came), `NotReady` when it reports not ready; Ready = (livez and
readyz) or healthz. The tolerance is the fleet's (`fleet.yaml: heartbeat.tolerance`), which the
agent declares in every heartbeat it sends (`toleranceSeconds`): so the hub, `gitfleet get` and
the dashboard, which read only status files, judge alike, and a live agent is judged by the
promise its own last heartbeat made, never by a newer, shorter one it has not seen yet (see
docs/heartbeats.md). An older agent's heartbeat declares none: 3 of its intervals. Pure: the
caller passes `now` and parses the status file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from gitfleet.wire.status import ClusterStatus, Heartbeat

HEARTBEAT_GRACE = 3   # intervals after which an older agent's silent cluster is Unknown


class Condition(StrEnum):
    READY = "Ready"
    NOT_READY = "NotReady"
    UNKNOWN = "Unknown"
    NEVER_REPORTED = "NeverReported"


@dataclass(frozen=True)
class Judgement:
    """A cluster's condition; `since` is when it began when the status alone tells it (the
    instant an Unknown cluster's heartbeat expired), else None (the hub keeps its first
    sighting in the state's taints)."""

    condition: Condition
    reason: str
    since: float | None = None
    last_heartbeat: float | None = None

    @property
    def ready(self) -> bool:
        return self.condition is Condition.READY


def judge(status: ClusterStatus | None, *, now: float,
          parse_time: Callable[[str], float]) -> Judgement:
    """Judge one cluster from its `status.yaml` (None: no status branch).

    `parse_time` turns the RFC 3339 heartbeat time into epoch seconds (ValueError if it
    cannot); an unreadable time counts as no heartbeat at all.
    """
    hb = status.heartbeat if status is not None else None
    if hb is None:
        return Judgement(Condition.NEVER_REPORTED, "no heartbeat yet")
    try:
        last = parse_time(hb.time)
    except ValueError:
        return Judgement(Condition.NEVER_REPORTED, "heartbeat time unreadable")
    expires = last + tolerance(hb)
    if now > expires:
        return Judgement(Condition.UNKNOWN, f"heartbeat older than its tolerance of "
                         f"{_said(tolerance(hb))}", since=expires, last_heartbeat=last)
    if not hb.ready:
        return Judgement(Condition.NOT_READY, "cluster reports not ready", last_heartbeat=last)
    return Judgement(Condition.READY, "", last_heartbeat=last)


def tolerance(hb: Heartbeat) -> float:
    """Seconds of silence after which the heartbeat's cluster is Unknown: what it declares,
    else (an older agent) HEARTBEAT_GRACE of its intervals."""
    if hb.tolerance_seconds > 0:
        return float(hb.tolerance_seconds)
    return HEARTBEAT_GRACE * max(float(hb.interval_seconds or 0), 1.0)


def _said(seconds: float) -> str:
    whole = int(seconds)
    if whole % 60 or whole < 60:
        return f"{seconds:g}s"
    return f"{whole // 60}m" if whole % 3600 or whole < 3600 else f"{whole // 3600}h"
