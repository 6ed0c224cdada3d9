"""A cluster's row of the fleet status: `clusters/<name>.yaml` on `<prefix>/fleet-status`
(kind ClusterSummary), written by the hub's fold for people and tools that read the branch.

The value is judged above this layer (`gitfleet.fleetview.summary`: the lifecycle condition,
the probes forced false unless Ready); `gitfleet get`/`status` use the same value, so the
branch and the tables cannot disagree. Writer and reader live here; a field the reader does not
know is an error naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.errors import InputError
from gitfleet.wire.fields import document, flag, known, mapping, number, required, text

API_VERSION = "gitfleet.io/v1alpha1"
KIND = "ClusterSummary"
TIME_KEY = "lastHeartbeat"
PROBES = ("healthz", "livez", "readyz")
SYNC_FIELDS = ("result", "stateCommit", "clusterCommit", "sourceCommit", "time", "message")

_FIELDS = frozenset({"apiVersion", "kind", "cluster", "inFleet", "ready", "reason", "condition",
                     "probes", "taints", "evictions", TIME_KEY, "heartbeatIntervalSeconds",
                     "versions", "platform", "nodes", "sync", "descriptions", "drifted",
                     "statusRejected", "statusWarning", "statusRepository"})
_SUB = {"probes": frozenset(PROBES), "versions": frozenset({"kubernetes", "agent"}),
        "nodes": frozenset({"ready", "notReady"}), "sync": frozenset(SYNC_FIELDS),
        "descriptions": frozenset({"total", "phases"})}


@dataclass(frozen=True)
class ClusterSummary:
    """One cluster's row: its condition, probes, versions, sync, taints and eviction tasks."""

    cluster: str
    in_fleet: bool
    ready: bool
    reason: str
    condition: str                         # Ready | NotReady | Unknown | NeverReported
    probes: Mapping[str, bool] = field(default_factory=dict)   # healthz, livez, readyz
    taints: tuple[str, ...] = ()
    evictions: int = 0
    last_heartbeat: str = ""
    interval_seconds: int = 0
    kubernetes_version: str = ""
    agent_version: str = ""
    platform: str = ""
    nodes_ready: int = 0
    nodes_not_ready: int = 0
    sync: Mapping[str, str] = field(default_factory=dict)      # SYNC_FIELDS
    descriptions: int = 0
    phases: Mapping[str, int] = field(default_factory=dict)
    drifted: int = 0
    status_rejected: str = ""              # why its status tip was not believed
    status_warning: str = ""               # that nothing checked its signer
    status_repository: str = ""            # the status repository it was read from

    @property
    def path(self) -> str:
        return summary_path(self.cluster)

    def to_doc(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION, "kind": KIND, "cluster": self.cluster,
            "inFleet": self.in_fleet, "ready": self.ready, "reason": self.reason,
            "condition": self.condition,
            "probes": {p: bool(self.probes.get(p)) for p in PROBES},
            "taints": list(self.taints), "evictions": self.evictions,
            TIME_KEY: self.last_heartbeat,
            "heartbeatIntervalSeconds": self.interval_seconds,
            "versions": {"kubernetes": self.kubernetes_version, "agent": self.agent_version},
            "platform": self.platform,
            "nodes": {"ready": self.nodes_ready, "notReady": self.nodes_not_ready},
            "sync": {k: self.sync.get(k, "") for k in SYNC_FIELDS},
            "descriptions": {"total": self.descriptions,
                             "phases": {p: self.phases[p] for p in sorted(self.phases)}},
            "drifted": self.drifted,
            **({"statusRejected": self.status_rejected} if self.status_rejected else {}),
            **({"statusWarning": self.status_warning} if self.status_warning else {}),
            **({"statusRepository": self.status_repository} if self.status_repository else {}),
        }


def summary_path(cluster: str) -> str:
    """Where a cluster's row lives on the fleet-status branch."""
    return f"clusters/{cluster}.yaml"


def read_cluster_summary(data: bytes | str, path: str) -> ClusterSummary:
    """A cluster's fleet-status row; InputError naming `path` and the field when it is not a
    file gitfleet wrote."""
    doc = document(data, path, KIND, _FIELDS)
    where = f"{KIND} {required(doc, 'cluster', path, KIND)}"
    sub = {}
    for key, fields in _SUB.items():
        sub[key] = mapping(doc.get(key), path, f"{where}: {key}")
        known(sub[key], fields, path, f"{where}: {key}")
    phases = mapping(sub["descriptions"].get("phases"), path, f"{where}: descriptions.phases")
    taints = doc.get("taints") or []
    if not isinstance(taints, list):
        raise InputError(f"{where}: taints must be a list", path=path)
    return ClusterSummary(
        cluster=text(doc, "cluster"), in_fleet=flag(doc, "inFleet", path, where),
        ready=flag(doc, "ready", path, where), reason=text(doc, "reason"),
        condition=text(doc, "condition"),
        probes={p: flag(sub["probes"], p, path, f"{where}: probes") for p in PROBES},
        taints=tuple(str(t) for t in taints),
        evictions=number(doc, "evictions", path, where, default=0),
        last_heartbeat=text(doc, TIME_KEY),
        interval_seconds=number(doc, "heartbeatIntervalSeconds", path, where, default=0),
        kubernetes_version=text(sub["versions"], "kubernetes"),
        agent_version=text(sub["versions"], "agent"), platform=text(doc, "platform"),
        nodes_ready=number(sub["nodes"], "ready", path, f"{where}: nodes", default=0),
        nodes_not_ready=number(sub["nodes"], "notReady", path, f"{where}: nodes", default=0),
        sync={k: text(sub["sync"], k) for k in SYNC_FIELDS},
        descriptions=number(sub["descriptions"], "total", path, f"{where}: descriptions",
                            default=0),
        phases={str(p): number(phases, p, path, f"{where}: descriptions.phases", default=0)
                for p in phases},
        drifted=number(doc, "drifted", path, where, default=0),
        status_rejected=text(doc, "statusRejected"), status_warning=text(doc, "statusWarning"),
        status_repository=text(doc, "statusRepository"))
