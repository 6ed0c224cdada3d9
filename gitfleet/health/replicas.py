"""A workload's replica counts, for the hub's fleet-wide aggregation (SEMANTICS, "Fleet-wide
per Subscription": summed replicas, ready, updated, available like upstream aggregation)."""

from __future__ import annotations

from gitfleet.health.verdict import Obj, count, section

REPLICA_FIELDS = ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas")
WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet")


def replica_status(live: Obj) -> dict[str, int]:
    """The counts of a Deployment, StatefulSet or ReplicaSet (0 where not reported: a sum
    needs a number); empty for every other kind."""
    if live.get("kind") not in WORKLOADS:
        return {}
    status = section(live, "status")
    return {f: count(status, f) or 0 for f in REPLICA_FIELDS}
