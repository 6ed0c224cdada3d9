"""Heartbeat judgement: is a cluster Ready, NotReady, Unknown or NeverReported?

SEMANTICS, "Registration and heartbeats": `Unknown` when now > last heartbeat + 3 x its
interval (`NeverReported` if none ever came), `NotReady` when it reports not ready; Ready =
(livez and readyz) or healthz. Pure: the caller passes `now` and parses the status file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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


def reported_ready(heartbeat: Mapping[str, Any]) -> bool:
    """Ready as the agent reports it: (livez and readyz) or healthz."""
    return bool((heartbeat.get("livez") and heartbeat.get("readyz")) or heartbeat.get("healthz"))


def judge(doc: Mapping[str, Any] | None, *, now: float,
          parse_time: Callable[[str], float]) -> Judgement:
    """Judge one cluster from its parsed `status.yaml` (None: no status branch).

    `parse_time` turns the RFC 3339 heartbeat time into epoch seconds (ValueError if it
    cannot); an unreadable time counts as no heartbeat at all.
    """
    hb = (doc or {}).get("heartbeat") or {}
    if not isinstance(hb, Mapping) or not hb:
        return Judgement(Condition.NEVER_REPORTED, "no heartbeat yet")
    try:
        last = parse_time(str(hb.get("time", "")))
    except ValueError:
        return Judgement(Condition.NEVER_REPORTED, "heartbeat time unreadable")
    try:
        interval = max(float(hb.get("intervalSeconds") or 0), 1.0)
    except (TypeError, ValueError):
        interval = 1.0
    expires = last + HEARTBEAT_GRACE * interval
    if now > expires:
        return Judgement(Condition.UNKNOWN, f"heartbeat older than {HEARTBEAT_GRACE} intervals",
                         since=expires, last_heartbeat=last)
    if not reported_ready(hb):
        return Judgement(Condition.NOT_READY, "cluster reports not ready", last_heartbeat=last)
    return Judgement(Condition.READY, "", last_heartbeat=last)
