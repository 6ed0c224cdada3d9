"""A cluster's row of the fleet status (`clusters/<name>.yaml` of `<prefix>/fleet-status`, kind
ClusterSummary) and a Subscription's phase over its clusters: written by the hub's fold, shown
by `gitfleet get` and counted by the hub's metrics, so judged the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitfleet.clock import parse_iso
from gitfleet.lifecycle.judgement import Condition, judge
from gitfleet.wire.status import ClusterStatus

API_VERSION = "gitfleet.io/v1alpha1"
PHASE_ORDER = ("Failure", "Degraded", "Unknown", "Progressing", "Installing", "Waiting", "Pending",
               "Success")
TIME_KEY = "lastHeartbeat"


def cluster_summary(name: str, status: ClusterStatus | None, *, now: float,
                    in_fleet: bool, taints: list[str] | None = None,
                    evictions: int = 0) -> dict[str, Any]:
    """One cluster's row of the fleet status: its condition (judged on heartbeat age and the
    probes it reports), versions, sync, the hub's taints and its eviction tasks."""
    hb = status.heartbeat if status is not None else None
    sync = status.sync.to_dict() if status is not None else {}
    judgement = judge(status, now=now, parse_time=parse_iso)
    ready, reason = judgement.ready, judgement.reason
    descriptions = status.descriptions if status is not None else ()
    phases: dict[str, int] = {}
    for d in descriptions:
        phases[str(d.phase)] = phases.get(str(d.phase), 0) + 1
    probes = {"healthz": hb.healthz, "livez": hb.livez, "readyz": hb.readyz} if hb else {}
    return {
        "apiVersion": API_VERSION, "kind": "ClusterSummary", "cluster": name,
        "inFleet": in_fleet,
        "ready": ready, "reason": reason, "condition": str(judgement.condition),
        "probes": {p: bool(probes.get(p)) and judgement.condition is Condition.READY
                   for p in ("healthz", "livez", "readyz")},
        "taints": list(taints or ()), "evictions": evictions,
        TIME_KEY: hb.time if hb else "",
        "heartbeatIntervalSeconds": hb.interval_seconds if hb else 0,
        "versions": {"kubernetes": hb.kubernetes_version if hb else "",
                     "agent": hb.agent_version if hb else ""},
        "platform": hb.platform if hb else "",
        "nodes": {"ready": hb.nodes_ready if hb else 0,
                  "notReady": hb.nodes_not_ready if hb else 0},
        "sync": {k: str(sync.get(k, "") or "") for k in
                 ("result", "stateCommit", "clusterCommit", "sourceCommit", "time", "message")},
        "descriptions": {"total": len(descriptions),
                         "phases": {p: phases[p] for p in sorted(phases)}},
        "drifted": len(status.drift) if status is not None else 0,
    }


def worst_phase(phases: list[str]) -> str:
    """The Subscription's phase: the worst of its clusters' (Success only when all are)."""
    if not phases:
        return "Pending"
    rank = {p: i for i, p in enumerate(PHASE_ORDER)}
    return min(phases, key=lambda p: rank.get(p, rank["Unknown"]))


def ready_clusters(statuses: Mapping[str, ClusterStatus], *, now: float) -> list[str]:
    """The clusters whose heartbeat says Ready at `now` (the autoscalers count their pods)."""
    return [name for name, status in sorted(statuses.items())
            if judge(status, now=now, parse_time=parse_iso).ready]
