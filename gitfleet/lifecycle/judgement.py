"""Heartbeat judgement: is a cluster Ready, NotReady, Unknown or NeverReported?

SEMANTICS, "Registration and heartbeats": `Unknown` when now > last heartbeat + 3 x its
interval (`NeverReported` if none ever came), `NotReady` when it reports not ready; Ready =
(livez and readyz) or healthz. Pure: the caller passes `now` and parses the status file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from gitfleet.wire.status import ClusterStatus

HEARTBEAT_GRACE = 3   # heartbeat intervals after which a silent cluster is Unknown


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
    interval = max(float(hb.interval_seconds or 0), 1.0)
    expires = last + HEARTBEAT_GRACE * interval
    if now > expires:
        return Judgement(Condition.UNKNOWN, f"heartbeat older than {HEARTBEAT_GRACE} intervals",
                         since=expires, last_heartbeat=last)
    if not hb.ready:
        return Judgement(Condition.NOT_READY, "cluster reports not ready", last_heartbeat=last)
    return Judgement(Condition.READY, "", last_heartbeat=last)
