"""The taints the hub gives a cluster from its judgement, and how long a policy tolerates them.

As Karmada's cluster controller does: a cluster NotReady or Unknown gets the `not-ready` /
`unreachable` taint with effect NoSchedule at once (no new placements), and with NoExecute
once it has stayed so for the fleet's eviction timeout (`failover.evictionTimeout`, default
5m); a policy then keeps its share there for its toleration's `tolerationSeconds` (default
`failover.tolerationSeconds`, 300), after which failover moves it (gitfleet.lifecycle.failover).
The taints go away when the cluster reports Ready again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.lifecycle.judgement import Condition, Judgement
from gitfleet.render.selection import (
    LIFECYCLE_TAINTS,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    taint_alias,
)

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
DEFAULT_EVICTION_TIMEOUT = 300.0

__all__ = ["LIFECYCLE_TAINTS", "NOT_READY_TAINT", "UNREACHABLE_TAINT", "HubTaint",
           "cluster_taints", "taint_key", "toleration_seconds"]


@dataclass(frozen=True)
class HubTaint:
    """A taint the hub set, with the instant it took effect (epoch seconds)."""

    key: str
    effect: str
    since: float


def taint_key(condition: Condition) -> str | None:
    """The taint a condition gives: unreachable (Unknown, NeverReported), not-ready, none."""
    if condition in (Condition.UNKNOWN, Condition.NEVER_REPORTED):
        return UNREACHABLE_TAINT
    if condition is Condition.NOT_READY:
        return NOT_READY_TAINT
    return None


def cluster_taints(judgement: Judgement, *, now: float, first_seen: float | None,
                   eviction_timeout: float) -> tuple[HubTaint, ...]:
    """The hub's taints for one cluster.

    The condition's start is what the status tells (an expired heartbeat), else when the hub
    first saw it (`first_seen`: the NoSchedule taint's time in the previous state), else now.
    NoExecute takes effect `eviction_timeout` after that start, so its time never moves.
    """
    key = taint_key(judgement.condition)
    if key is None:
        return ()
    since = judgement.since if judgement.since is not None else \
        first_seen if first_seen is not None else now
    taints = [HubTaint(key, NO_SCHEDULE, since)]
    if now >= since + eviction_timeout:
        taints.append(HubTaint(key, NO_EXECUTE, since + eviction_timeout))
    return tuple(taints)


def toleration_seconds(tolerations: Iterable[Mapping[str, Any]], key: str,
                       default: float) -> float | None:
    """How long a policy keeps its share on a cluster with the NoExecute taint `key`: the
    first matching toleration's `tolerationSeconds` (None: forever, when it gives none), else
    `default`. Karmada's names (`cluster.karmada.io/unreachable`, `.../not-ready`) are the same
    taints."""
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect and effect != NO_EXECUTE:
            continue
        op = t.get("operator") or "Equal"
        wanted = taint_alias(str(t.get("key") or ""))
        if op == "Exists":
            if wanted and wanted != key:
                continue
        elif wanted != key or str(t.get("value") or ""):
            continue
        seconds = t.get("tolerationSeconds")
        if seconds is None:
            return None
        return max(0.0, float(seconds))
    return default
