"""A cluster's row of the fleet status (`clusters/<name>.yaml` of `<prefix>/fleet-status`, kind
ClusterSummary) and a Subscription's phase over its clusters: written by the hub's fold, shown
by `gitfleet get` and counted by the hub's metrics, so judged the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitfleet.clock import parse_iso
from gitfleet.lifecycle.judgement import Condition, judge

API_VERSION = "gitfleet.io/v1alpha1"
PHASE_ORDER = ("Failure", "Degraded", "Unknown", "Progressing", "Installing", "Pending", "Success")
TIME_KEY = "lastHeartbeat"


def cluster_summary(name: str, doc: Mapping[str, Any] | None, *, now: float,
                    in_fleet: bool, taints: list[str] | None = None,
                    evictions: int = 0) -> dict[str, Any]:
    """One cluster's row of the fleet status: its condition (judged on heartbeat age and the
    probes it reports), versions, sync, the hub's taints and its eviction tasks."""
    hb = (doc or {}).get("heartbeat") or {}
    sync = (doc or {}).get("sync") or {}
    interval = int(hb.get("intervalSeconds") or 0)
    judgement = judge(doc, now=now, parse_time=parse_iso)
    ready, reason = judgement.ready, judgement.reason
    descriptions = (doc or {}).get("descriptions") or []
    phases: dict[str, int] = {}
    for d in descriptions:
        phase = str(d.get("phase", "Pending"))
        phases[phase] = phases.get(phase, 0) + 1
    nodes = hb.get("nodes") or {}
    return {
        "apiVersion": API_VERSION, "kind": "ClusterSummary", "cluster": name,
        "inFleet": in_fleet,
        "ready": ready, "reason": reason, "condition": str(judgement.condition),
        "probes": {p: bool(hb.get(p)) and judgement.condition is Condition.READY
                   for p in ("healthz", "livez", "readyz")},
        "taints": list(taints or ()), "evictions": evictions,
        TIME_KEY: str(hb.get("time", "")),
        "heartbeatIntervalSeconds": interval,
        "versions": {"kubernetes": str(hb.get("kubernetesVersion", "")),
                     "agent": str(hb.get("agentVersion", ""))},
        "platform": str(hb.get("platform", "")),
        "nodes": {"ready": int(nodes.get("ready", 0) or 0),
                  "notReady": int(nodes.get("notReady", 0) or 0)},
        "sync": {k: str(sync.get(k, "") or "") for k in
                 ("result", "stateCommit", "clusterCommit", "sourceCommit", "time", "message")},
        "descriptions": {"total": len(descriptions),
                         "phases": {p: phases[p] for p in sorted(phases)}},
        "drifted": len((doc or {}).get("drift") or []),
    }


def worst_phase(phases: list[str]) -> str:
    """The Subscription's phase: the worst of its clusters' (Success only when all are)."""
    if not phases:
        return "Pending"
    rank = {p: i for i, p in enumerate(PHASE_ORDER)}
    return min(phases, key=lambda p: rank.get(p, rank["Unknown"]))


def ready_clusters(statuses: Mapping[str, Mapping[str, Any]], *, now: float) -> list[str]:
    """The clusters whose heartbeat says Ready at `now` (the autoscalers count their pods)."""
    return [name for name, doc in sorted(statuses.items())
            if cluster_summary(name, doc, now=now, in_fleet=True)["ready"]]
