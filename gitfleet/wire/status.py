"""`status.yaml` on `gitfleet/status/<cluster>`: what one agent reports, and what the hub reads.

The agent is the only writer of its status branch; the hub folds every cluster's file into the
fleet-wide status. The file is plain data so `git log -p` of the branch reads as an audit trail:
which state commit was applied, what changed per object, which Descriptions are healthy, what
drifted and when it was first seen. Times are RFC 3339 UTC strings (`gitfleet.clock.isoformat`).

Example:

    apiVersion: gitfleet.io/v1alpha1
    kind: ClusterStatus
    cluster: child-1
    heartbeat:
      time: '2026-01-01T00:01:00Z'
      intervalSeconds: 60
      toleranceSeconds: 180         # silence after which the hub judges it Unknown
      clusterId: 4b0c...            # UID of kube-system
      kubernetesVersion: v1.29.0
      agentVersion: 0.1.0
      platform: linux/amd64
      healthz: true
      livez: true
      readyz: true
      nodes: {ready: 2, notReady: 0}
      capacity: {cpu: '8', memory: 16Gi, gpu: '0'}
      allocatable: {cpu: '8', memory: 16Gi, gpu: '0'}
      requested: {cpu: 300m, memory: 192Mi, gpu: '0'}
      appPusher: false
    sync:
      clusterCommit: 9f1c...        # commit of gitfleet/clusters/<name> applied
      stateCommit: 51aa...          # gitfleet/state commit (trailer), else clusterCommit
      sourceCommit: 0d3e...         # fleet repo commit (trailer), when known
      time: '2026-01-01T00:00:10Z'  # when that commit was (last) applied
      result: Synced                # Synced | OutOfSync | Failed | PruneRefused | Unreachable
                                    # | Pending | Refused (commit not signed by a trusted key)
      message: ''
    descriptions:
    - namespace: default
      name: web
      phase: Success                # see Phase
      message: ''
      sourceCommit: 0d3e...
      renderErrors: 0
      objects:
      - {apiVersion: apps/v1, kind: Deployment, namespace: bar, name: web,
         change: configured, health: Healthy, error: '',
         status: {replicas: 3, readyReplicas: 3, updatedReplicas: 3, availableReplicas: 3}}
    drift:
    - apiVersion: apps/v1
      kind: Deployment
      namespace: bar
      name: web
      description: default/web
      firstSeen: '2026-01-01T00:00:40Z'
      missing: false                # true when the object is gone
      fields:
      - {path: spec.replicas, desired: 3, live: 1}
    pruned:                         # objects the last applied state commit deleted (or
                                    # released: kept, without gitfleet's labels)
    - {apiVersion: v1, kind: ConfigMap, namespace: bar, name: old, change: deleted,
       health: Unknown, error: ''}

`heartbeat.time` is the only field that moves when nothing happens; the status branch writer
treats a change of it alone as a heartbeat and replaces the previous heartbeat-only commit
instead of growing history (see `statusbranch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import gitfleet
from gitfleet import yamlio
from gitfleet.errors import InputError

API_VERSION = "gitfleet.io/v1alpha1"
KIND = "ClusterStatus"
# `heartbeat.agentVersion` of the heartbeats a hub's push worker writes for an agentless cluster
HUB_WORKER_VERSION = f"hub-push-worker/{gitfleet.__version__}"


class Change(StrEnum):
    """What the last sync did to one object (Flux's change set vocabulary)."""

    CREATED = "created"
    CONFIGURED = "configured"
    UNCHANGED = "unchanged"
    DELETED = "deleted"
    SKIPPED = "skipped"
    FAILED = "failed"
    RELEASED = "released"  # left the fleet, kept in the cluster without gitfleet's marks


class Health(StrEnum):
    HEALTHY = "Healthy"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    SUSPENDED = "Suspended"  # paused on purpose (a paused Deployment, a suspended Job)
    UNKNOWN = "Unknown"


class Phase(StrEnum):
    PENDING = "Pending"
    INSTALLING = "Installing"
    SUCCESS = "Success"
    PROGRESSING = "Progressing"
    FAILURE = "Failure"
    DEGRADED = "Degraded"
    UNKNOWN = "Unknown"
    WAITING = "Waiting"   # held until the units it depends on are Success here (ordering)


class SyncResult(StrEnum):
    PENDING = "Pending"
    SYNCED = "Synced"
    OUT_OF_SYNC = "OutOfSync"  # applied, but live objects differ (drift not put back)
    FAILED = "Failed"
    PRUNE_REFUSED = "PruneRefused"
    UNREACHABLE = "Unreachable"
    REFUSED = "Refused"        # the cluster-branch commit is not signed by a trusted hub key


@dataclass(frozen=True)
class NodeGroup:
    """Schedulable nodes with the same free room (allocatable minus what their pods request,
    per resource, `pods` included): the heartbeat's per-node summary, so that the hub counts
    room per node as a scheduler does, in a size bounded by the kinds of nodes, not their
    number."""

    nodes: int
    free: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "free": dict(sorted(self.free.items()))}

    @classmethod
    def from_dict(cls, d: Any) -> NodeGroup:
        if not isinstance(d, Mapping):
            raise ValueError(f"nodeGroups: each entry is a mapping, not {d!r}")
        free = d.get("free") or {}
        if not isinstance(free, Mapping):
            raise ValueError(f"nodeGroups: free must be a mapping, not {free!r}")
        return cls(nodes=int(d.get("nodes", 0)), free={str(k): str(v) for k, v in free.items()})


@dataclass(frozen=True)
class Heartbeat:
    time: str
    interval_seconds: int
    cluster_id: str = ""
    kubernetes_version: str = ""
    agent_version: str = ""
    platform: str = ""
    healthz: bool = False
    livez: bool = False
    readyz: bool = False
    nodes_ready: int = 0
    nodes_not_ready: int = 0
    capacity: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, str] = field(default_factory=dict)
    requested: Mapping[str, str] = field(default_factory=dict)
    app_pusher: bool = False
    api_versions: tuple[str, ...] = ()   # served group/versions: what HelmCharts render with
    # silence after which the hub judges the cluster Unknown (the fleet's, from cluster.yaml);
    # 0 in older agents' heartbeats: 3 intervals (gitfleet.lifecycle.judgement)
    tolerance_seconds: int = 0
    # free room per group of identical schedulable nodes; None in older agents' heartbeats
    # (the hub then counts room from the sums above)
    node_groups: tuple[NodeGroup, ...] | None = None

    @property
    def ready(self) -> bool:
        """SEMANTICS: Ready = (livez and readyz) or healthz."""
        return (self.livez and self.readyz) or self.healthz

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "intervalSeconds": self.interval_seconds,
            "clusterId": self.cluster_id,
            "kubernetesVersion": self.kubernetes_version,
            "agentVersion": self.agent_version,
            "platform": self.platform,
            "healthz": self.healthz,
            "livez": self.livez,
            "readyz": self.readyz,
            "nodes": {"ready": self.nodes_ready, "notReady": self.nodes_not_ready},
            "capacity": dict(self.capacity),
            "allocatable": dict(self.allocatable),
            "requested": dict(self.requested),
            "appPusher": self.app_pusher,
            **({"apiVersions": list(self.api_versions)} if self.api_versions else {}),
            **({"toleranceSeconds": self.tolerance_seconds} if self.tolerance_seconds else {}),
            **({"nodeGroups": [g.to_dict() for g in self.node_groups]}
               if self.node_groups is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Heartbeat:
        nodes = d.get("nodes") or {}
        return cls(
            time=str(d.get("time", "")),
            interval_seconds=int(d.get("intervalSeconds", 0)),
            cluster_id=str(d.get("clusterId", "")),
            kubernetes_version=str(d.get("kubernetesVersion", "")),
            agent_version=str(d.get("agentVersion", "")),
            platform=str(d.get("platform", "")),
            healthz=bool(d.get("healthz", False)),
            livez=bool(d.get("livez", False)),
            readyz=bool(d.get("readyz", False)),
            nodes_ready=int(nodes.get("ready", 0)),
            nodes_not_ready=int(nodes.get("notReady", 0)),
            capacity={str(k): str(v) for k, v in (d.get("capacity") or {}).items()},
            allocatable={str(k): str(v) for k, v in (d.get("allocatable") or {}).items()},
            requested={str(k): str(v) for k, v in (d.get("requested") or {}).items()},
            app_pusher=bool(d.get("appPusher", False)),
            api_versions=tuple(str(a) for a in d.get("apiVersions") or ()),
            tolerance_seconds=int(d.get("toleranceSeconds", 0) or 0),
            node_groups=(tuple(NodeGroup.from_dict(g) for g in d["nodeGroups"] or ())
                         if "nodeGroups" in d else None),
        )


@dataclass(frozen=True)
class ObjectStatus:
    api_version: str
    kind: str
    namespace: str
    name: str
    change: Change
    health: Health = Health.UNKNOWN
    error: str = ""
    replicas: Mapping[str, int] = field(default_factory=dict)
    # failover statePreservation: alias label -> value its rules select from the live status
    preserved: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
            "name": self.name, "change": str(self.change), "health": str(self.health),
            "error": self.error}
        if self.replicas:
            out["status"] = dict(self.replicas)
        if self.preserved:
            out["preserved"] = dict(sorted(self.preserved.items()))
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ObjectStatus:
        return cls(api_version=str(d.get("apiVersion", "")), kind=str(d.get("kind", "")),
                   namespace=str(d.get("namespace", "") or ""), name=str(d.get("name", "")),
                   change=Change(d.get("change", "unchanged")),
                   health=Health(d.get("health", "Unknown")), error=str(d.get("error", "") or ""),
                   replicas={str(k): int(v) for k, v in (d.get("status") or {}).items()},
                   preserved={str(k): str(v) for k, v in (d.get("preserved") or {}).items()})


@dataclass(frozen=True)
class DescriptionStatus:
    namespace: str
    name: str
    phase: Phase
    message: str = ""
    source_commit: str = ""
    render_errors: int = 0
    objects: tuple[ObjectStatus, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name, "phase": str(self.phase),
                "message": self.message, "sourceCommit": self.source_commit,
                "renderErrors": self.render_errors,
                "objects": [o.to_dict() for o in self.objects]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DescriptionStatus:
        return cls(namespace=str(d.get("namespace", "")), name=str(d.get("name", "")),
                   phase=Phase(d.get("phase", "Pending")), message=str(d.get("message", "") or ""),
                   source_commit=str(d.get("sourceCommit", "") or ""),
                   render_errors=int(d.get("renderErrors", 0) or 0),
                   objects=tuple(ObjectStatus.from_dict(o) for o in d.get("objects") or ()))


@dataclass(frozen=True)
class FieldDrift:
    path: str
    desired: Any
    live: Any

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "desired": self.desired, "live": self.live}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FieldDrift:
        return cls(path=str(d.get("path", "")), desired=d.get("desired"), live=d.get("live"))


@dataclass(frozen=True)
class Drift:
    api_version: str
    kind: str
    namespace: str
    name: str
    description: str
    first_seen: str
    missing: bool = False
    fields: tuple[FieldDrift, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "description": self.description, "firstSeen": self.first_seen,
                "missing": self.missing, "fields": [f.to_dict() for f in self.fields]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Drift:
        return cls(api_version=str(d.get("apiVersion", "")), kind=str(d.get("kind", "")),
                   namespace=str(d.get("namespace", "") or ""), name=str(d.get("name", "")),
                   description=str(d.get("description", "")),
                   first_seen=str(d.get("firstSeen", "")), missing=bool(d.get("missing", False)),
                   fields=tuple(FieldDrift.from_dict(f) for f in d.get("fields") or ()))


@dataclass(frozen=True)
class SyncStatus:
    cluster_commit: str = ""
    state_commit: str = ""
    source_commit: str = ""
    time: str = ""
    result: SyncResult = SyncResult.PENDING
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"clusterCommit": self.cluster_commit, "stateCommit": self.state_commit,
                "sourceCommit": self.source_commit, "time": self.time,
                "result": str(self.result), "message": self.message}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SyncStatus:
        return cls(cluster_commit=str(d.get("clusterCommit", "") or ""),
                   state_commit=str(d.get("stateCommit", "") or ""),
                   source_commit=str(d.get("sourceCommit", "") or ""),
                   time=str(d.get("time", "") or ""),
                   result=SyncResult(d.get("result", "Pending")),
                   message=str(d.get("message", "") or ""))


@dataclass(frozen=True)
class ClusterStatus:
    cluster: str
    heartbeat: Heartbeat | None = None
    sync: SyncStatus = field(default_factory=SyncStatus)
    descriptions: tuple[DescriptionStatus, ...] = ()
    drift: tuple[Drift, ...] = ()
    pruned: tuple[ObjectStatus, ...] = ()

    def description(self, key: str) -> DescriptionStatus | None:
        return next((d for d in self.descriptions if d.key == key), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "cluster": self.cluster,
            "heartbeat": self.heartbeat.to_dict() if self.heartbeat else None,
            "sync": self.sync.to_dict(),
            "descriptions": [d.to_dict() for d in self.descriptions],
            "drift": [d.to_dict() for d in self.drift],
            "pruned": [o.to_dict() for o in self.pruned],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClusterStatus:
        if not isinstance(d, Mapping) or d.get("kind") != KIND:
            raise InputError(f"not a {KIND} document", path="status.yaml")
        hb = d.get("heartbeat")
        return cls(
            cluster=str(d.get("cluster", "")),
            heartbeat=Heartbeat.from_dict(hb) if hb else None,
            sync=SyncStatus.from_dict(d.get("sync") or {}),
            descriptions=tuple(DescriptionStatus.from_dict(x) for x in d.get("descriptions") or ()),
            drift=tuple(Drift.from_dict(x) for x in d.get("drift") or ()),
            pruned=tuple(ObjectStatus.from_dict(x) for x in d.get("pruned") or ()),
        )

    def to_yaml(self) -> str:
        return yamlio.dump(self.to_dict())

    @classmethod
    def from_yaml(cls, data: bytes | str, path: str = "status.yaml") -> ClusterStatus:
        doc = yamlio.load_one(data, path)
        if doc is None:
            raise InputError("empty status file", path=path)
        return cls.from_dict(doc)

    def without_times(self) -> ClusterStatus:
        """This status with the fields that move on every heartbeat blanked, for comparison."""
        hb = replace(self.heartbeat, time="") if self.heartbeat else None
        return replace(self, heartbeat=hb)
