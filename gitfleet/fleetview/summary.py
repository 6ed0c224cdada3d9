"""A cluster's row of the fleet status (`clusters/<name>.yaml` of `<prefix>/fleet-status`, kind
ClusterSummary: `gitfleet.wire.fleetstatus`) and a Subscription's phase over its clusters:
judged here, written by the hub's fold, shown by `gitfleet get`, so judged the same way
everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitfleet.clock import parse_iso
from gitfleet.lifecycle.judgement import Condition, judge
from gitfleet.wire.fleetstatus import API_VERSION, PROBES, SYNC_FIELDS, TIME_KEY, ClusterSummary
from gitfleet.wire.status import ClusterStatus

__all__ = ["API_VERSION", "PHASE_ORDER", "TIME_KEY", "cluster_summary", "ready_clusters",
           "summary_of", "worst_phase"]

PHASE_ORDER = ("Failure", "Degraded", "Unknown", "Progressing", "Installing", "Waiting", "Pending",
               "Success")


def summary_of(name: str, status: ClusterStatus | None, *, now: float,
               in_fleet: bool, taints: list[str] | None = None, evictions: int = 0,
               rejected: str = "", warning: str = "", repository: str = "",
               held: str = "") -> ClusterSummary:
    """One cluster's row of the fleet status: its condition (judged on heartbeat age and the
    probes it reports), versions, sync, the hub's taints and its eviction tasks (and, from the
    hub's status trust, why its tip was rejected, a warning, the repository it came from;
    `held`: the mass-deletion guard's hold of its state, gitfleet.render.guards)."""
    hb = status.heartbeat if status is not None else None
    sync = status.sync.to_dict() if status is not None else {}
    judgement = judge(status, now=now, parse_time=parse_iso)
    descriptions = status.descriptions if status is not None else ()
    phases: dict[str, int] = {}
    for d in descriptions:
        phases[str(d.phase)] = phases.get(str(d.phase), 0) + 1
    probes = {"healthz": hb.healthz, "livez": hb.livez, "readyz": hb.readyz} if hb else {}
    return ClusterSummary(
        cluster=name, in_fleet=in_fleet, ready=judgement.ready, reason=judgement.reason,
        condition=str(judgement.condition),
        probes={p: bool(probes.get(p)) and judgement.condition is Condition.READY
                for p in PROBES},
        taints=tuple(taints or ()), evictions=evictions,
        last_heartbeat=hb.time if hb else "",
        interval_seconds=hb.interval_seconds if hb else 0,
        kubernetes_version=hb.kubernetes_version if hb else "",
        agent_version=hb.agent_version if hb else "", platform=hb.platform if hb else "",
        nodes_ready=hb.nodes_ready if hb else 0, nodes_not_ready=hb.nodes_not_ready if hb else 0,
        sync={k: str(sync.get(k, "") or "") for k in SYNC_FIELDS},
        descriptions=len(descriptions), phases=phases,
        drifted=len(status.drift) if status is not None else 0,
        status_rejected=rejected, status_warning=warning, status_repository=repository,
        held=held)


def cluster_summary(name: str, status: ClusterStatus | None, *, now: float,
                    in_fleet: bool, taints: list[str] | None = None, evictions: int = 0,
                    rejected: str = "", warning: str = "", repository: str = "",
                    held: str = "") -> dict[str, Any]:
    """`summary_of` as the document the hub's fold writes (`gitfleet.wire.fleetstatus`)."""
    return summary_of(name, status, now=now, in_fleet=in_fleet, taints=taints,
                      evictions=evictions, rejected=rejected, warning=warning,
                      repository=repository, held=held).to_doc()


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
