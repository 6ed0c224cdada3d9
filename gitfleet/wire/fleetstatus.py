"""The fleet-status branch (`<prefix>/fleet-status`), written by the hub's fold for people and
tools that read the branch: a cluster's row `clusters/<name>.yaml` (kind ClusterSummary) and a
Subscription's `subscriptions/<ns>/<name>.yaml` (kind SubscriptionStatus: its phase and
replicas over its clusters, one row per cluster).

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
from gitfleet.wire.fields import (
    document,
    flag,
    items,
    known,
    mapping,
    number,
    required,
    text,
)

API_VERSION = "gitfleet.io/v1alpha1"
KIND = "ClusterSummary"
TIME_KEY = "lastHeartbeat"
PROBES = ("healthz", "livez", "readyz")
SYNC_FIELDS = ("result", "stateCommit", "clusterCommit", "sourceCommit", "time", "message")
SUBSCRIPTION_KIND = "SubscriptionStatus"
REPLICA_FIELDS = ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas")

_FIELDS = frozenset({"apiVersion", "kind", "cluster", "inFleet", "ready", "reason", "condition",
                     "probes", "taints", "evictions", TIME_KEY, "heartbeatIntervalSeconds",
                     "versions", "platform", "nodes", "sync", "descriptions", "drifted",
                     "statusRejected", "statusWarning", "statusRepository", "held"})
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
    held: str = ""                         # the hub's mass-deletion hold (gitfleet.render.guards)

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
            **({"held": self.held} if self.held else {}),
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
        status_repository=text(doc, "statusRepository"), held=text(doc, "held"))


# -- subscriptions/<ns>/<name>.yaml ---------------------------------------------------------------
# The fold assembles these files from text it keeps per row (hub/fleetstatus.py), so the two
# document shapes are plain functions it calls; the typed value below is what a reader gets.

_SUB_FIELDS = frozenset({"apiVersion", "kind", "source", "phase", "boundClusters", "phases",
                         "desiredReplicas", "replicaStatus", "clusters"})
_ROW_FIELDS = frozenset({"cluster", "phase", "desiredReplicas", "replicaStatus", "sourceCommit",
                         "message"})
_SOURCE_FIELDS = frozenset({"apiVersion", "kind", "namespace", "name"})


def subscription_row(cluster: str, phase: str, desired: int, replicas: Mapping[str, int],
                     source_commit: str, message: str) -> dict[str, Any]:
    """One cluster's row of a Subscription's file."""
    return {"cluster": cluster, "phase": phase, "desiredReplicas": desired,
            "replicaStatus": replicas, "sourceCommit": source_commit, "message": message}


def subscription_head(source: Mapping[str, str], phase: str, bound: int,
                      phases: Mapping[str, int], desired: int, replicas: Mapping[str, int]
                      ) -> dict[str, Any]:
    """A Subscription's file before its `clusters:` rows."""
    return {"apiVersion": API_VERSION, "kind": SUBSCRIPTION_KIND, "source": source,
            "phase": phase, "boundClusters": bound, "phases": phases,
            "desiredReplicas": desired, "replicaStatus": replicas}


@dataclass(frozen=True)
class SubscriptionRow:
    cluster: str
    phase: str
    desired: int
    replicas: Mapping[str, int]            # REPLICA_FIELDS
    source_commit: str = ""
    message: str = ""

    def to_doc(self) -> dict[str, Any]:
        return subscription_row(self.cluster, self.phase, self.desired, dict(self.replicas),
                                self.source_commit, self.message)


@dataclass(frozen=True)
class SubscriptionStatus:
    """A Subscription (or policy) over its clusters: the worst phase, how many of each, the
    replicas desired and reported, summed like upstream aggregation, and one row per cluster."""

    source: Mapping[str, str]              # apiVersion, kind, namespace, name (or its folder)
    phase: str
    bound: int
    phases: Mapping[str, int]
    desired: int
    replicas: Mapping[str, int]
    rows: tuple[SubscriptionRow, ...] = ()

    def to_doc(self) -> dict[str, Any]:
        return {**subscription_head(dict(self.source), self.phase, self.bound, dict(self.phases),
                                    self.desired, dict(self.replicas)),
                "clusters": [r.to_doc() for r in self.rows]}


def _replicas(value: Any, path: str, where: str) -> dict[str, int]:
    m = mapping(value, path, f"{where}: replicaStatus")
    known(m, REPLICA_FIELDS, path, f"{where}: replicaStatus")
    return {f: number(m, f, path, f"{where}: replicaStatus", default=0) for f in REPLICA_FIELDS}


def read_subscription_status(data: bytes | str, path: str) -> SubscriptionStatus:
    """A Subscription's fleet-status file; InputError naming `path` and the field when it is
    not a file gitfleet wrote."""
    doc = document(data, path, SUBSCRIPTION_KIND, _SUB_FIELDS)
    source = mapping(doc.get("source"), path, f"{SUBSCRIPTION_KIND}: source")
    known(source, _SOURCE_FIELDS, path, f"{SUBSCRIPTION_KIND}: source")
    where = f"{SUBSCRIPTION_KIND} {text(source, 'namespace')}/{text(source, 'name')}"
    phases = mapping(doc.get("phases"), path, f"{where}: phases")
    rows = []
    for value in items(doc.get("clusters"), path, f"{where}: clusters"):
        r = mapping(value, path, f"{where}: clusters[]")
        here = f"{where}: cluster {r.get('cluster', '')}"
        known(r, _ROW_FIELDS, path, here)
        rows.append(SubscriptionRow(
            cluster=str(required(r, "cluster", path, here)), phase=text(r, "phase"),
            desired=number(r, "desiredReplicas", path, here, default=0),
            replicas=_replicas(r.get("replicaStatus"), path, here),
            source_commit=text(r, "sourceCommit"), message=text(r, "message")))
    return SubscriptionStatus(
        source={str(k): str(v) for k, v in source.items()}, phase=text(doc, "phase"),
        bound=number(doc, "boundClusters", path, where, default=0),
        phases={str(p): number(phases, p, path, f"{where}: phases", default=0) for p in phases},
        desired=number(doc, "desiredReplicas", path, where, default=0),
        replicas=_replicas(doc.get("replicaStatus"), path, where), rows=tuple(rows))
